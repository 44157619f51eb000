"""The web console: read-only pages of topics, partitions, records, groups and transactions,
rendered on the server (Jinja) and refreshed in place by a few lines of plain JavaScript that
re-fetch the page's live part (`?fragment=1`) every couple of seconds. No front-end build.

Two actions exist only when the broker was started with them switched on (`--console-actions`):
abort a hanging transaction on a partition (what `kafka-transactions.sh abort` does; a live one is
refused) and reset an empty group's offsets (what `kafka-consumer-groups.sh --reset-offsets
--execute` does).

Nothing here authenticates its users, so the console defends the browser of the one who may use
it (on loopback) against other sites open in it: a request must name the console's own host
(`Host`, against DNS rebinding, where a site's name is pointed at 127.0.0.1), an action must come
from the console's own pages (`Origin`, and a token made at start in every form), and no page may
be framed by another site (clickjacking).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from aiohttp import web

from minikafka.observe.model import BatchRow
from minikafka.observe.ports import ActionRefused, BrokerActions, BrokerView
from minikafka.text_formats import format_duration, format_time

HERE = Path(__file__).parent
REFRESH_MS = 2000
PAGE_BATCHES = 50
SHOWN_BYTES = 160  # a key or value longer than this is cut in the record browser


def _shown(data: bytes | None) -> str:
    if data is None:
        return "null"
    try:
        text = data.decode("utf-8")
        printable = text.isprintable()
    except UnicodeDecodeError:
        printable = False
    if not printable:
        text = "0x" + data[: SHOWN_BYTES // 2].hex() + ("…" if len(data) > SHOWN_BYTES // 2 else "")
        return text
    return text if len(text) <= SHOWN_BYTES else text[:SHOWN_BYTES] + "…"


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _batch_class(b: BatchRow) -> str:
    if b.control is not None:
        return "control " + b.control.lower()
    if b.aborted:
        return "aborted"
    if b.open:
        return "open"
    return "committed" if b.transactional else "plain"


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
SECURITY_HEADERS = {"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
                    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'"}


class Console:
    def __init__(self, view: BrokerView, actions: BrokerActions | None, *, host: str = "127.0.0.1") -> None:
        self.view = view
        self.actions = actions
        self.token = secrets.token_urlsafe(24)
        # The host names a request may name: loopback's, or the configured address when the
        # console serves another one (then the operator chose who can reach it).
        self.hosts = LOOPBACK_NAMES | {host, f"[{host}]"}
        self.any_host = host in ("0.0.0.0", "::", "")
        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                                      autoescape=jinja2.select_autoescape(("html",)),
                                      undefined=jinja2.StrictUndefined)
        self.env.filters.update(shown=_shown, time=format_time, duration=format_duration, size=_size, batch_class=_batch_class,
                                q=lambda s: quote(str(s), safe=""))

    @web.middleware
    async def guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """Refuse requests for another host name (DNS rebinding) and actions from other origins;
        every answer forbids framing."""
        if not self.any_host and request.host.rsplit(":", 1)[0] not in self.hosts \
                and request.host not in self.hosts:
            raise web.HTTPMisdirectedRequest(text=f"this console answers to {sorted(self.hosts)[0]} only")
        if request.method == "POST":
            origin = request.headers.get("Origin")
            if origin is not None and origin.split("://", 1)[-1] != request.host:
                raise web.HTTPForbidden(text="actions are taken from the console's own pages only")
        try:
            answer = await handler(request)
        except web.HTTPException as exc:
            exc.headers.update(SECURITY_HEADERS)
            raise
        answer.headers.update(SECURITY_HEADERS)
        return answer

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/", self.overview),
            web.get("/topics/{topic}", self.topic),
            web.get("/topics/{topic}/{partition}", self.partition_records),
            web.get("/groups", self.groups),
            web.get("/groups/{group}", self.group),
            web.get("/transactions", self.transactions),
            web.get("/transactions/{txn}", self.transaction),
            web.post("/actions/abort-transaction", self.abort_transaction),
            web.post("/actions/reset-offsets", self.reset_offsets),
            web.static("/static", HERE / "static"),
        ]

    # ------------------------------------------------------------------------------ rendering
    def _page(self, request: web.Request, template: str, title: str, status: int = 200, **values: Any) -> web.Response:
        values.update(now_ms=self.view.now_ms(), actions=self.actions is not None, token=self.token,
                      message=request.query.get("message"), error=request.query.get("error"))
        main = self.env.get_template(template).render(**values)
        if request.query.get("fragment") == "1":
            return web.Response(text=main, content_type="text/html", status=status)
        summary = self.view.summary()
        html = self.env.get_template("base.html").render(main=jinja2.utils.markupsafe.Markup(main), title=title,
                                                         summary=summary, refresh_ms=REFRESH_MS,
                                                         section=template.removesuffix(".html"))
        return web.Response(text=html, content_type="text/html", status=status)

    async def overview(self, request: web.Request) -> web.Response:
        partitions = self.view.partitions()
        topics: dict[str, dict[str, Any]] = {}
        for p in partitions:
            t = topics.setdefault(p.topic, {"name": p.topic, "internal": p.internal, "partitions": 0, "records": 0,
                                            "size": 0, "lso_lag": 0, "open": 0, "segments": 0})
            t["partitions"] += 1
            t["records"] += p.high_watermark - p.log_start_offset
            t["size"] += p.size_bytes
            t["lso_lag"] += p.lso_lag
            t["open"] += p.open_transactions
            t["segments"] += p.segments
        m = self.view.meters
        show_internal = request.query.get("internal") == "1"
        return self._page(request, "topics.html", "Topics", topics=[t for t in topics.values()
                                                                     if show_internal or not t["internal"]],
                          show_internal=show_internal, messages_in=sum(m.messages_in.values()),
                          bytes_in=sum(m.bytes_in.values()), bytes_out=sum(m.bytes_out.values()),
                          txn_committed=m.txn_committed, txn_aborted=m.txn_aborted)

    async def topic(self, request: web.Request) -> web.Response:
        name = request.match_info["topic"]
        partitions = self.view.partitions(name)
        if not partitions:
            return self._page(request, "missing.html", "Not found", 404, what=f"topic {name}")
        return self._page(request, "topic.html", name, topic=name, partitions=partitions)

    async def partition_records(self, request: web.Request) -> web.Response:
        name = request.match_info["topic"]
        try:
            partition = int(request.match_info["partition"])
            offset = int(request.query.get("offset", "0"))
        except ValueError:
            return self._page(request, "missing.html", "Not found", 404, what="a partition number and offset")
        committed = request.query.get("isolation", "read_uncommitted") == "read_committed"
        page = self.view.records(name, partition, offset, PAGE_BATCHES)
        if page is None:
            return self._page(request, "missing.html", "Not found", 404, what=f"partition {name}-{partition}")
        batches = [b for b in page.batches if not committed or
                   (b.control is None and not b.aborted and b.base_offset < page.last_stable_offset)]
        base = f"/topics/{quote(name, safe='')}/{partition}"
        nav = {k: f"{base}?{urlencode({'offset': o, 'isolation': 'read_committed' if committed else 'read_uncommitted'})}"
               for k, o in (("first", page.log_start_offset), ("next", page.next_offset),
                            ("last", max(page.log_start_offset, page.high_watermark - 20)))}
        toggle = f"{base}?{urlencode({'offset': page.start_offset, 'isolation': 'read_uncommitted' if committed else 'read_committed'})}"
        return self._page(request, "records.html", f"{name}-{partition}", page=page, batches=batches,
                          committed=committed, nav=nav, toggle=toggle, hidden=len(page.batches) - len(batches))

    async def groups(self, request: web.Request) -> web.Response:
        return self._page(request, "groups.html", "Consumer groups", groups=self.view.groups())

    async def group(self, request: web.Request) -> web.Response:
        g = self.view.group(request.match_info["group"])
        if g is None:
            return self._page(request, "missing.html", "Not found", 404, what=f"group {request.match_info['group']}")
        return self._page(request, "group.html", g.group_id, group=g)

    def _pinned(self, transactional_id: str | None = None) -> list[tuple[Any, str | None]]:
        """The partitions an open transaction holds back (of one transactional id), each with why it
        is hanging, or None while its transaction is live."""
        return [(p, self.view.hanging(p.topic, p.partition, p.pinned_by.producer_id))
                for p in self.view.partitions() if p.pinned_by is not None
                and (transactional_id is None or p.pinned_by.transactional_id == transactional_id)]

    async def transactions(self, request: web.Request) -> web.Response:
        return self._page(request, "transactions.html", "Transactions", transactions=self.view.transactions(),
                          pinned=self._pinned())

    async def transaction(self, request: web.Request) -> web.Response:
        txn_id = request.match_info["txn"]
        t = self.view.transaction(txn_id)
        if t is None:  # the coordinator has no such id (never had, or it expired): nothing is scanned
            return self._page(request, "missing.html", "Not found", 404, what=f"transactional id {txn_id}")
        return self._page(request, "transaction.html", txn_id, txn=t, transactional_id=txn_id,
                          timeline=self.view.transaction_log(txn_id), pinned=self._pinned(txn_id))

    # ------------------------------------------------------------------------------ actions
    async def _form(self, request: web.Request) -> dict[str, str]:
        if self.actions is None:
            raise web.HTTPForbidden(text="console actions are off (start the broker with --console-actions)")
        form = {k: str(v) for k, v in (await request.post()).items()}
        if not secrets.compare_digest(form.get("token", ""), self.token):
            raise web.HTTPForbidden(text="the form's token does not match this broker's (reload the page)")
        return form

    @staticmethod
    def _back(form: dict[str, str], **outcome: str) -> web.HTTPSeeOther:
        back = form.get("back", "/")
        if not back.startswith("/") or back.startswith("//") or "\\" in back:  # only a path of this console
            back = "/"
        sep = "&" if "?" in back else "?"
        return web.HTTPSeeOther(back + sep + urlencode(outcome))

    async def abort_transaction(self, request: web.Request) -> web.Response:
        form = await self._form(request)
        assert self.actions is not None
        try:
            topic, partition, pid = form["topic"], int(form["partition"]), int(form["producer_id"])
            await self.actions.abort_transaction(topic, partition, pid)
        except (KeyError, ValueError):
            raise self._back(form, error="topic, partition and producer_id are required") from None
        except ActionRefused as exc:
            raise self._back(form, error=f"abort refused: {exc}") from None
        raise self._back(form, message=f"aborted producer {pid}'s transaction on {topic}-{partition}")

    async def reset_offsets(self, request: web.Request) -> web.Response:
        form = await self._form(request)
        assert self.actions is not None
        group_id = form.get("group", "")
        g = self.view.group(group_id)
        if g is None:
            raise self._back(form, error=f"no group {group_id}")
        to = form.get("to", "earliest")
        if to not in ("earliest", "latest"):
            raise self._back(form, error=f"reset to {to!r}: earliest or latest")
        by_tp = {(p.topic, p.partition): p for t in {o.topic for o in g.offsets} for p in self.view.partitions(t)}
        targets = []
        for o in g.offsets:
            p = by_tp.get((o.topic, o.partition))
            if p is None:
                continue
            targets.append((o.topic, o.partition, p.log_start_offset if to == "earliest" else p.high_watermark))
        try:
            await self.actions.reset_offsets(group_id, targets)
        except ActionRefused as exc:
            raise self._back(form, error=f"reset refused: {exc}") from None
        raise self._back(form, message=f"reset {len(targets)} offsets of {group_id} to {to}")
