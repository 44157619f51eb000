// The compatibility scenarios (tests/compat/scenario.py) with @platformatic/kafka.
'use strict';

const {
  Admin, Consumer, Producer, stringSerializers, stringDeserializers, FetchIsolationLevels,
} = require('@platformatic/kafka');

const { Failed, check, sleep, until, checkOrdered, run } = require('./common');

// Errors of the consumers' streams, reported by waitFor() as the scenario's failure.
const streamErrors = [];

function waitFor(timeoutMs, done) {
  return until(timeoutMs, done, async () => {
    if (streamErrors.length) {
      const e = streamErrors[0];
      const first = (e.errors && e.errors[0] && e.errors[0].errors && e.errors[0].errors[0]) || e;
      throw new Failed(`consumer stream: ${e.message} (${first.apiId || first.code || first.message})`);
    }
    await sleep(50);
  });
}

const base = (bootstrap) => ({ clientId: 'compat-platformatic', bootstrapBrokers: [bootstrap] });

async function withAdmin(bootstrap, fn) {
  const admin = new Admin(base(bootstrap));
  try {
    return await fn(admin);
  } finally {
    await admin.close();
  }
}

const create = (bootstrap, topic, partitions, configs = []) =>
  withAdmin(bootstrap, (admin) => admin.createTopics({ topics: [topic], partitions, replicas: 1, configs }));

async function produce(bootstrap, topic, start, n, options = {}) {
  const producer = new Producer({ ...base(bootstrap), serializers: stringSerializers, ...options });
  try {
    const messages = [];
    for (let i = start; i < start + n; i++) messages.push({ topic, key: `k${i}`, value: `v${i}` });
    await producer.send({ messages, acks: -1 });
  } finally {
    await producer.close();
  }
}

// A group member reading `topic` into `records` (from the group's commit, else the start).
async function member(bootstrap, groupId, topic, records, options = {}) {
  const consumer = new Consumer({ ...base(bootstrap), groupId, deserializers: stringDeserializers, ...options });
  const stream = await consumer.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest', autocommit: false });
  stream.on('error', (e) => streamErrors.push(e));
  stream.on('data', (m) => records.push({ partition: m.partition, key: m.key, value: m.value, offset: m.offset, message: m }));
  let fetches = 0; // completed Fetch requests (the stream emits 'fetch' for each, records or not)
  stream.on('fetch', () => { fetches += 1; });
  const assigned = () => (consumer.assignments || []).filter((a) => a.topic === topic)
    .reduce((n, a) => n + a.partitions.length, 0);
  return { consumer, stream, assigned, fetches: () => fetches,
    close: async () => { await stream.close(); await consumer.close(); } };
}

async function produceConsume(bootstrap, prefix) {
  const topic = `${prefix}-pc`;
  await create(bootstrap, topic, 3);
  await produce(bootstrap, topic, 0, 300);
  const records = [];
  const m = await member(bootstrap, `${prefix}-pc-g`, topic, records);
  try {
    await waitFor(30000, () => records.length >= 300);
    checkOrdered(records, 300);
  } finally {
    await m.close();
  }
}

async function commitAll(consumer, topic, records) {
  const next = new Map();
  for (const r of records) next.set(r.partition, Math.max(next.get(r.partition) ?? 0, Number(r.offset) + 1));
  await consumer.commit({
    offsets: [...next].map(([partition, offset]) => ({ topic, partition, offset: BigInt(offset), leaderEpoch: -1 })),
  });
}

async function groupResume(bootstrap, prefix) {
  const topic = `${prefix}-gr`;
  const groupId = `${prefix}-gr-g`;
  await create(bootstrap, topic, 2);
  const ra = [];
  const rb = [];
  const a = await member(bootstrap, groupId, topic, ra);
  const b = await member(bootstrap, groupId, topic, rb);
  await waitFor(60000, () => a.assigned() === 1 && b.assigned() === 1);
  // A Fetch sent before the rebalance still names both partitions and, answered after the produce,
  // would hand the first member the revoked partition's records too (the stream does not drop them).
  // One completed Fetch per member after the new assignment means the next ones name its partition only.
  const [fa, fb] = [a.fetches(), b.fetches()];
  await waitFor(60000, () => a.fetches() > fa && b.fetches() > fb);
  await produce(bootstrap, topic, 0, 100);
  await waitFor(60000, () => ra.length + rb.length >= 100);
  check(ra.length > 0 && rb.length > 0 && ra.length + rb.length === 100, `members read ${ra.length} and ${rb.length}`);
  await commitAll(a.consumer, topic, ra);
  await commitAll(b.consumer, topic, rb);
  await a.close();
  await b.close();
  await produce(bootstrap, topic, 100, 50);
  const rc = [];
  const c = await member(bootstrap, groupId, topic, rc);
  try {
    await waitFor(30000, () => rc.length >= 50);
    await sleep(500); // a record too many would come now
    const values = rc.map((r) => Number(r.value.slice(1))).sort((x, y) => x - y);
    check(values.length === 50 && values[0] === 100 && values[49] === 149, `did not resume at the commit: ${values.length} records`);
  } finally {
    await c.close();
  }
}

async function idempotent(bootstrap, prefix) {
  const topic = `${prefix}-idem`;
  await create(bootstrap, topic, 1);
  await produce(bootstrap, topic, 0, 200, { idempotent: true });
  const records = [];
  const m = await member(bootstrap, `${prefix}-idem-g`, topic, records);
  try {
    await waitFor(30000, () => records.length >= 200);
    checkOrdered(records, 200);
  } finally {
    await m.close();
  }
}

async function transactional(bootstrap, prefix) {
  const src = `${prefix}-in`;
  const dst = `${prefix}-out`;
  const groupId = `${prefix}-eos-g`;
  await create(bootstrap, src, 1);
  await create(bootstrap, dst, 1);
  await produce(bootstrap, src, 0, 100);
  const producer = new Producer({ ...base(bootstrap), serializers: stringSerializers,
    transactionalId: `${prefix}-txn`, idempotent: true });
  // The input is read by a member of the copier's group that never commits by itself; each batch
  // of 10 is copied in a transaction that commits the group's offset; the third is aborted and redone.
  const input = [];
  const reader = await member(bootstrap, groupId, src, input, { isolationLevel: FetchIsolationLevels.READ_COMMITTED });
  await waitFor(30000, () => input.length >= 100);
  let copied = 0;
  let batches = 0;
  while (copied < 100) {
    const batch = input.slice(copied, copied + 10);
    const txn = await producer.beginTransaction();
    await txn.send({ messages: batch.map((r) => ({ topic: dst, key: r.key, value: r.value.toUpperCase() })) });
    await txn.addConsumer(reader.consumer);
    await txn.addOffset(batch[batch.length - 1].message);
    batches += 1;
    if (batches === 3) {
      await txn.abort();
      continue;
    }
    await txn.commit();
    copied += batch.length;
  }
  await producer.close();
  await reader.close();
  const out = [];
  const r = await member(bootstrap, `${prefix}-eos-r`, dst, out, { isolationLevel: FetchIsolationLevels.READ_COMMITTED });
  try {
    await waitFor(30000, () => out.length >= 100);
    await sleep(1000); // a value too many would come now
    const values = out.map((o) => o.value);
    check(values.length === 100 && new Set(values).size === 100 && values.every((v) => v.startsWith('V')),
      `read ${values.length} output values`);
  } finally {
    await r.close();
  }
  await withAdmin(bootstrap, async (admin) => {
    const [group] = await admin.listConsumerGroupOffsets({ groups: [groupId] });
    const committed = Number(group.topics.find((t) => t.name === src).partitions[0].committedOffset);
    check(committed === 100, `committed input offset ${committed}`);
  });
}

async function admin(bootstrap, prefix) {
  const topic = `${prefix}-adm`;
  await withAdmin(bootstrap, async (adm) => {
    await adm.createTopics({ topics: [topic], partitions: 2, replicas: 1, configs: [{ name: 'retention.ms', value: '100000' }] });
    const retention = async () => {
      const [d] = await adm.describeConfigs({ resources: [{ resourceType: 2, resourceName: topic, configurationKeys: ['retention.ms'] }] });
      return d.configs.find((e) => e.name === 'retention.ms').value;
    };
    check(await retention() === '100000', 'retention.ms not as created');
    await adm.incrementalAlterConfigs({ resources: [{ resourceType: 2, resourceName: topic,
      configs: [{ name: 'retention.ms', configOperation: 0, value: '200000' }] }] });
    for (const end = Date.now() + 10000; await retention() !== '200000'; await sleep(100)) {
      check(Date.now() < end, 'retention.ms not changed'); // Kafka applies a change asynchronously
    }
    await adm.createPartitions({ topics: [{ name: topic, count: 4 }] });
    const producer = new Producer({ ...base(bootstrap), serializers: stringSerializers });
    await producer.send({ messages: Array.from({ length: 10 }, (_, i) => ({ topic, value: `v${i}`, partition: 0 })) });
    await producer.close();
    const meta = await adm.metadata({ topics: [topic] });
    check(meta.topics.get(topic).partitionsCount === 4, 'partitions not added');
    const [deleted] = await adm.deleteRecords({ topics: [{ name: topic, partitions: [{ partition: 0, offset: 5n }] }] });
    check(Number(deleted.partitions[0].lowWatermark) === 5, 'delete records did not move the start');
    await adm.listGroups();
    await adm.deleteTopics({ topics: [topic] });
    for (const end = Date.now() + 10000; (await adm.listTopics()).includes(topic); await sleep(100)) {
      check(Date.now() < end, 'topic still listed'); // Kafka forgets a deleted topic asynchronously
    }
  });
}

const SCENARIOS = { produce_consume: produceConsume, group_resume: groupResume, idempotent, transactional, admin };

run(SCENARIOS);
