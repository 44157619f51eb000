// Shared by the Node programs of the compatibility matrix (kafkajs.js, platformatic.js): the checks
// every scenario ends with and the entry point (tests/compat/scenario.py says what they do).
'use strict';

class Failed extends Error {}
const check = (ok, what) => { if (!ok) throw new Failed(what); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(timeoutMs, done, step = () => sleep(50)) {
  const end = Date.now() + timeoutMs;
  while (!done()) {
    check(Date.now() < end, 'timed out');
    await step();
  }
}

// records: { partition, key, value } as read; values v0..v{n-1} once each, key k<i> for v<i>.
function checkOrdered(records, n) {
  const values = records.map((r) => Number(r.value.slice(1))).sort((a, b) => a - b);
  check(values.length === n && values.every((v, i) => v === i), `read ${records.length} records, expected v0..v${n - 1} once each`);
  const byKey = new Map();
  const last = new Map();
  for (const r of records) {
    if (byKey.has(r.key)) check(byKey.get(r.key) === r.partition, `key ${r.key} on two partitions`);
    byKey.set(r.key, r.partition);
    const i = Number(r.value.slice(1));
    check((last.get(r.partition) ?? -1) < i, `partition ${r.partition} out of order at ${r.value}`);
    last.set(r.partition, i);
  }
}

// `node <program> <scenario> <bootstrap> <prefix>`: ok and 0, n/a and 3, or one line and 1.
function run(scenarios) {
  (async () => {
    const [scenario, bootstrap, prefix] = process.argv.slice(2);
    if (!scenarios[scenario]) {
      console.log(`n/a: ${scenario} is not supported by this client`);
      process.exit(3);
    }
    try {
      await scenarios[scenario](bootstrap, prefix);
      console.log('ok');
      process.exit(0);
    } catch (e) {
      console.log(`FAILED: ${e instanceof Failed ? e.message : `${e.name}: ${e.message}`}`);
      process.exit(1);
    }
  })();
}

module.exports = { Failed, check, sleep, until, checkOrdered, run };
