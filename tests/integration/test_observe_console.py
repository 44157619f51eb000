"""Issue 22: the web console in a real browser (Debian's headless Chromium driven by Playwright),
loaded during a workload with a committed, an aborted and a hanging transaction and a lagging
group: the pages show the transaction that pins the last stable offset, the aborted records and
the markers inline, the group's lag, update live, and the two actions work. Screenshots of every
page are saved in the test's tmp dir.

minikafka only (Apache Kafka has no console of its own).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from clients import consume_n, consumer, create_topic, produce_all, producer, uniq
from confluent_kafka import TopicPartition
from txnclients import close_quietly, flush_raising, hwm, lso, txn_producer

pytestmark = pytest.mark.integration

CHROMIUM = os.environ.get("MINIKAFKA_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
# As the machine's notes advise: without these, Chromium keeps trying to reach Google's hosts.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WAIT_MS = 20_000


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip("needs Chromium (Debian: apt-get install chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


class Pages:
    def __init__(self, browser: Any, base: str, shots: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.base = base
        self.shots = shots
        self.shots.mkdir(exist_ok=True)

    def open(self, path: str) -> Any:
        answer = self.page.goto(self.base + path)
        assert answer is not None and answer.status == 200, (path, answer and answer.status)
        return self.page

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 1000
        return path

    def text(self, selector: str) -> str:
        return self.page.locator(selector).inner_text(timeout=WAIT_MS)


def test_the_console_shows_the_pinning_transaction_the_aborted_records_and_the_lag(broker_factory, browser,
                                                                                   tmp_path):
    b = broker_factory(observe=True, console_actions=True)
    bs = b.bootstrap
    topic, group, stuck_id = uniq("shop"), uniq("g"), uniq("stuck")
    create_topic(bs, topic, partitions=2)
    p = txn_producer(bs, uniq("t"))
    p.begin_transaction()
    for part in (0, 0, 1, 1):
        p.produce(topic, key=b"order", value=f"paid-{part}".encode(), partition=part)
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(topic, key=b"order", value=b"cancelled-1", partition=0)
    p.produce(topic, key=b"order", value=b"cancelled-2", partition=0)
    flush_raising(p)
    p.abort_transaction(30)
    stuck = txn_producer(bs, stuck_id)
    stuck.begin_transaction()
    stuck.produce(topic, value=b"never ends", partition=1)
    flush_raising(stuck)
    c = consumer(bs, **{"group.id": group, "isolation.level": "read_committed"})
    c.subscribe([topic])
    assert len(consume_n(c, 4)) == 4
    c.commit(offsets=[TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 0)], asynchronous=False)
    ui = Pages(browser, b.console_url, tmp_path / "screenshots")

    # Topics: the topic, with partition 1's last stable offset held back by one record.
    page = ui.open("/")
    row = page.locator(f'#topics tr[data-topic="{topic}"]')
    assert row.count() == 1
    assert row.locator("td").nth(5).inner_text() == "1"  # LSO lag over the topic
    ui.shot("topics")

    # Transactions: the hanging id is Ongoing and named as what pins shop-1.
    page = ui.open("/transactions")
    assert ui.text(f'#transactions tr[data-txn="{stuck_id}"] .state') == "Ongoing"
    assert stuck_id in ui.text(f'#pinned tr[data-tp="{topic}-1"] .pinned')
    assert page.locator(f'#pinned tr[data-tp="{topic}-0"]').count() == 0
    ui.shot("transactions")

    # The topic's partitions: who holds each back.
    ui.open(f"/topics/{topic}")
    assert stuck_id in ui.text('#partitions tr[data-partition="1"] .pinned')
    assert ui.text('#partitions tr[data-partition="0"] .pinned') == "-"
    hw1, lso1 = hwm(bs, topic, 1), lso(bs, topic, 1)
    assert (ui.text('#partitions tr[data-partition="1"] .hw'), ui.text('#partitions tr[data-partition="1"] .lso')) \
        == (str(hw1), str(lso1))
    ui.shot("topic")

    # Records of partition 0, read_uncommitted: the committed records, the aborted ones struck
    # through and both markers inline.
    page = ui.open(f"/topics/{topic}/0?offset=0")
    assert page.locator("#records tr.aborted").count() == 2
    assert page.locator("#records tr.control.commit").count() == 1
    assert page.locator("#records tr.control.abort").count() == 1
    assert "cancelled-1" in ui.text("#records tr.aborted >> nth=0")
    assert page.locator("#records tr.committed").count() == 2
    assert "producer" in ui.text(".aborted-ranges")
    ui.shot("records-read-uncommitted")
    page.click("#isolation-toggle")
    page.wait_for_url(re.compile("isolation=read_committed"))
    assert page.locator("#records tr.aborted").count() == 0
    assert page.locator("#records tr.control").count() == 0
    assert [t.strip() for t in page.locator("#records td.value").all_inner_texts()] == ["paid-0", "paid-0"]
    ui.shot("records-read-committed")

    # The group: lag = high watermark - committed, per partition; it moves live as records arrive.
    page = ui.open(f"/groups/{group}")
    token = page.locator("form.action input[name=token]").get_attribute("value")
    hw0 = hwm(bs, topic, 0)
    assert ui.text(f'#offsets tr[data-tp="{topic}-0"] .lag') == str(hw0 - 1)
    assert ui.text(f'#offsets tr[data-tp="{topic}-1"] .lag') == str(hw1 - 0)
    plain = producer(bs)
    produce_all(plain, topic, ({"value": b"late", "partition": 0} for _ in range(3)))
    page.wait_for_function(
        "([sel, want]) => document.querySelector(sel)?.innerText === want",
        arg=[f'#offsets tr[data-tp="{topic}-0"] .lag', str(hw0 + 3 - 1)], timeout=WAIT_MS)  # no reload
    ui.shot("group")

    # A live transaction (its producer can still end it) gets no abort button, and the action
    # refuses it: an ABORT marker on one partition would let the rest of it commit without it.
    page = ui.open(f"/transactions/{stuck_id}")
    assert ui.text("#txn .state") == "Ongoing"
    assert [t.strip() for t in page.locator("#timeline td.state").all_inner_texts()][-2:] == ["Empty", "Ongoing"]
    assert ui.text(f'#pinned tr[data-tp="{topic}-1"] .hanging').startswith("no (live")
    assert page.locator(f'#pinned tr[data-tp="{topic}-1"] button').count() == 0
    stuck_pid = page.locator("#txn tr", has_text="Producer id").locator("td").inner_text().split("/")[0].strip()
    refused = page.request.post(b.console_url + "/actions/abort-transaction", max_redirects=0, form={
        "token": token, "topic": topic, "partition": "1", "producer_id": stuck_pid,
        "back": f"/transactions/{stuck_id}"})
    assert refused.status == 303 and "live" in refused.headers["location"]
    assert lso(bs, topic, 1) < hwm(bs, topic, 1)

    # Action: the producer aborts, its marker to shop-1 is lost (the hanging_transaction fault,
    # KIP-664): the coordinator's transaction is over, the partition's is not. The console names
    # it hanging and aborts it there, as kafka-transactions.sh abort does.
    b.faults.scenario("hanging_transaction", topic=topic, partition=1)
    stuck.abort_transaction(30)
    page = ui.open(f"/transactions/{stuck_id}")
    assert ui.text("#txn .state") == "CompleteAbort"
    assert ui.text(f'#pinned tr[data-tp="{topic}-1"] .hanging').startswith("yes: ")
    assert lso(bs, topic, 1) < hwm(bs, topic, 1)  # still held back by the lost marker
    ui.shot("transaction-hanging")
    page.click(f'#pinned tr[data-tp="{topic}-1"] button')
    page.wait_for_selector(".message", timeout=WAIT_MS)
    assert "aborted producer" in ui.text(".message")
    assert page.locator(f'#pinned tr[data-tp="{topic}-1"]').count() == 0
    assert lso(bs, topic, 1) == hwm(bs, topic, 1)  # read_committed consumers move on
    ui.shot("transaction-aborted")

    # Action: reset the (now empty) group's offsets to the latest.
    c.close()
    page = ui.open(f"/groups/{group}")
    page.wait_for_function("() => document.querySelector('.state')?.innerText === 'Empty'", timeout=WAIT_MS)
    page.select_option("form.action select", "latest")
    page.click("form.action button")
    page.wait_for_selector(".message", timeout=WAIT_MS)
    probe = consumer(bs, **{"group.id": group})
    committed = probe.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
    probe.close()
    assert [tp.offset for tp in committed] == [hwm(bs, topic, 0), hwm(bs, topic, 1)]
    ui.shot("group-reset")
    plain.flush(5)
    close_quietly(p, stuck, plain)


def test_actions_are_off_unless_switched_on(broker_factory, browser, tmp_path):
    """Without --console-actions the pages have no buttons and the action URLs refuse (403)."""
    b = broker_factory(observe=True)
    topic, stuck_id = uniq("quiet"), uniq("stuck")
    create_topic(b.bootstrap, topic)
    stuck = txn_producer(b.bootstrap, stuck_id)
    stuck.begin_transaction()
    stuck.produce(topic, value=b"v")
    flush_raising(stuck)
    ui = Pages(browser, b.console_url, tmp_path / "screenshots")
    page = ui.open(f"/transactions/{stuck_id}")
    assert stuck_id in ui.text("h1")
    assert page.locator(f'#pinned tr[data-tp="{topic}-0"]').count() == 1
    assert page.locator("form.action").count() == 0
    answer = page.request.post(b.console_url + "/actions/abort-transaction",
                               form={"topic": topic, "partition": "0", "producer_id": "0"})
    assert answer.status == 403
    assert lso(b.bootstrap, topic, 0) == 0  # nothing was aborted
    close_quietly(stuck)


def test_other_sites_cannot_use_the_console(broker_factory, browser, tmp_path):
    """A page of another site open in the same browser cannot take the console's actions (a token
    made at the broker's start in each form; its Origin), read it through a name pointed at
    127.0.0.1 (DNS rebinding: the Host must be the console's), or frame it (clickjacking)."""
    b = broker_factory(observe=True, console_actions=True)
    ui = Pages(browser, b.console_url, tmp_path / "screenshots")
    page = ui.open("/")
    answer = page.request.post(b.console_url + "/actions/reset-offsets",
                               form={"group": "g", "to": "earliest", "token": "guessed"})
    assert answer.status == 403
    assert "token" in answer.text()
    cross = page.request.post(b.console_url + "/actions/reset-offsets", form={"group": "g", "to": "earliest"},
                              headers={"Origin": "http://evil.example"})
    assert cross.status == 403
    rebound = page.request.get(b.console_url + "/", headers={"Host": f"evil.example:{b.console_port}"})
    assert rebound.status == 421
    framed = page.request.get(b.console_url + "/")
    assert framed.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in framed.headers["content-security-policy"]
    assert page.request.get(b.console_url + "/topics/no-such-topic").status == 404
    assert page.request.get(b.console_url + "/transactions/no-such-id").status == 404
