"""Kafka principals and the TLS principal mapping rules (pure).

Kafka's DefaultKafkaPrincipalBuilder: PLAINTEXT and SSL without a client certificate give
User:ANONYMOUS; SSL with one gives User:<name>, the certificate's subject DN (RFC 2253, as Java's
X500Principal.getName() writes it) put through `ssl.principal.mapping.rules`; SASL gives
User:<the authorization id the mechanism settled on>.

Mapping rules (SslPrincipalMapper): a comma- or newline-separated list of `DEFAULT` (the DN as it
is) and `RULE:pattern/replacement/[L|U]`. The first rule whose pattern matches the whole DN wins;
its replacement ($1 for a group) is applied, then lower- or upper-cased. No rule matching is an
error (the connection fails), as in Kafka.
"""

from __future__ import annotations

import dataclasses
import re


@dataclasses.dataclass(frozen=True)
class KafkaPrincipal:
    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """`Type:name` (KafkaPrincipal.fromString): raises ValueError without the colon."""
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise ValueError(f"expected a string in format principalType:principalName but got {text}")
        return cls(kind, name)


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")


class NoMatchingRule(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        out = self.pattern.sub(self.replacement, dn)
        return out.lower() if self.case == "L" else out.upper() if self.case == "U" else out


def _java_replacement(text: str) -> str:
    """A Java replacement string ($1, \\$) as Python's re.sub template."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append("\\\\" if nxt == "\\" else nxt)
            i += 2
        elif ch == "$" and i + 1 < len(text) and text[i + 1].isdigit():
            j = i + 1
            while j < len(text) and text[j].isdigit():
                j += 1
            out.append(f"\\g<{text[i + 1:j]}>")
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _read_until_slash(text: str, pos: int) -> tuple[str, int]:
    """Up to the next unescaped '/', with '\\/' read as '/'."""
    out = []
    while pos < len(text):
        ch = text[pos]
        if ch == "\\" and pos + 1 < len(text) and text[pos + 1] == "/":
            out.append("/")
            pos += 2
            continue
        if ch == "/":
            return "".join(out), pos + 1
        out.append(ch)
        pos += 1
    raise ValueError("Invalid rule: expected RULE:pattern/replacement/[LU]")


class SslPrincipalMapper:
    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules = self._parse(rules.strip() or "DEFAULT")

    @staticmethod
    def _parse(text: str) -> list[_Rule]:
        rules: list[_Rule] = []
        pos = 0
        while pos < len(text):
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= len(text):
                break
            if text.startswith("DEFAULT", pos):
                rules.append(_Rule(None))
                pos += len("DEFAULT")
            elif text.startswith("RULE:", pos):
                pattern, pos = _read_until_slash(text, pos + len("RULE:"))
                replacement, pos = _read_until_slash(text, pos)
                case = ""
                if pos < len(text) and text[pos] in "LU":
                    case = text[pos]
                    pos += 1
                try:
                    rules.append(_Rule(re.compile(pattern), _java_replacement(replacement), case))
                except re.error as exc:
                    raise ValueError(f"Invalid rule pattern {pattern!r}: {exc}") from None
            else:
                end = min([i for i in (text.find(",", pos), text.find("\n", pos)) if i >= 0] or [len(text)])
                raise ValueError(f"Invalid rule: {text[pos:end].strip()}")
            while pos < len(text) and text[pos] in " \t\r":
                pos += 1
            if pos < len(text) and text[pos] not in ",\n":
                raise ValueError(f"Invalid rule: {text}")
        return rules

    def name(self, dn: str) -> str:
        for rule in self.rules:
            out = rule.apply(dn)
            if out is not None:
                return out
        raise NoMatchingRule(f"No rules apply to {dn}, rules {self.rules}")
