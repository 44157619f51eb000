// The compatibility scenarios (tests/compat/scenario.py) with KafkaJS.
'use strict';

const { Kafka, logLevel } = require('kafkajs');

const { Failed, check, sleep, until, checkOrdered, run } = require('./common');

function kafka(bootstrap) {
  return new Kafka({ clientId: 'compat-kafkajs', brokers: [bootstrap], logLevel: logLevel.NOTHING });
}

async function create(bootstrap, topic, numPartitions, configEntries = []) {
  const admin = kafka(bootstrap).admin();
  await admin.connect();
  try {
    check(await admin.createTopics({ topics: [{ topic, numPartitions, replicationFactor: 1, configEntries }], waitForLeaders: true }),
      'topic not created');
  } finally {
    await admin.disconnect();
  }
}

async function produce(bootstrap, topic, start, n, options = {}) {
  const producer = kafka(bootstrap).producer(options);
  await producer.connect();
  try {
    const messages = [];
    for (let i = start; i < start + n; i++) messages.push({ key: `k${i}`, value: `v${i}` });
    await producer.send({ topic, messages, acks: -1 });
  } finally {
    await producer.disconnect();
  }
}

async function member(bootstrap, groupId, topic, records, options = {}) {
  const consumer = kafka(bootstrap).consumer({ groupId, ...options });
  const assigned = { count: 0 };
  consumer.on(consumer.events.GROUP_JOIN, (e) => { assigned.count = (e.payload.memberAssignment[topic] || []).length; });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      records.push({ partition, key: message.key.toString(), value: message.value.toString(), offset: message.offset });
    },
  });
  return { consumer, assigned };
}

async function produceConsume(bootstrap, prefix) {
  const topic = `${prefix}-pc`;
  await create(bootstrap, topic, 3);
  await produce(bootstrap, topic, 0, 300);
  const records = [];
  const { consumer } = await member(bootstrap, `${prefix}-pc-g`, topic, records);
  try {
    await until(30000, () => records.length >= 300);
    checkOrdered(records, 300);
  } finally {
    await consumer.disconnect();
  }
}

async function commitAll(consumer, topic, records) {
  const next = new Map();
  for (const r of records) next.set(r.partition, Math.max(next.get(r.partition) ?? 0, Number(r.offset) + 1));
  await consumer.commitOffsets([...next].map(([partition, offset]) => ({ topic, partition, offset: String(offset) })));
}

async function groupResume(bootstrap, prefix) {
  const topic = `${prefix}-gr`;
  const groupId = `${prefix}-gr-g`;
  await create(bootstrap, topic, 2);
  const ra = [];
  const rb = [];
  const a = await member(bootstrap, groupId, topic, ra);
  const b = await member(bootstrap, groupId, topic, rb);
  await until(60000, () => a.assigned.count === 1 && b.assigned.count === 1);
  await produce(bootstrap, topic, 0, 100);
  await until(60000, () => ra.length + rb.length >= 100);
  check(ra.length > 0 && rb.length > 0 && ra.length + rb.length === 100, `members read ${ra.length} and ${rb.length}`);
  await commitAll(a.consumer, topic, ra);
  await commitAll(b.consumer, topic, rb);
  await a.consumer.disconnect();
  await b.consumer.disconnect();
  await produce(bootstrap, topic, 100, 50);
  const rc = [];
  const c = await member(bootstrap, groupId, topic, rc);
  try {
    await until(30000, () => rc.length >= 50);
    await sleep(500); // a record too many would come now
    const values = rc.map((r) => Number(r.value.slice(1))).sort((x, y) => x - y);
    check(values.length === 50 && values[0] === 100 && values[49] === 149, `did not resume at the commit: ${values.length} records`);
  } finally {
    await c.consumer.disconnect();
  }
}

async function idempotent(bootstrap, prefix) {
  const topic = `${prefix}-idem`;
  await create(bootstrap, topic, 1);
  await produce(bootstrap, topic, 0, 200, { idempotent: true, maxInFlightRequests: 1 });
  const records = [];
  const { consumer } = await member(bootstrap, `${prefix}-idem-g`, topic, records);
  try {
    await until(30000, () => records.length >= 200);
    checkOrdered(records, 200);
  } finally {
    await consumer.disconnect();
  }
}

async function transactional(bootstrap, prefix) {
  const src = `${prefix}-in`;
  const dst = `${prefix}-out`;
  const groupId = `${prefix}-eos-g`;
  await create(bootstrap, src, 1);
  await create(bootstrap, dst, 1);
  await produce(bootstrap, src, 0, 100);
  const client = kafka(bootstrap);
  const producer = client.producer({ transactionalId: `${prefix}-txn`, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  // The input is read with a consumer of its own group (never committing itself); each batch of 10
  // is copied in a transaction that commits the group's offsets; the third is aborted and redone.
  const reader = client.consumer({ groupId: `${prefix}-eos-src`, readUncommitted: false });
  const input = [];
  await reader.connect();
  await reader.subscribe({ topic: src, fromBeginning: true });
  await reader.run({ autoCommit: false, eachMessage: async ({ message }) => { input.push(message); } });
  await until(30000, () => input.length >= 100);
  await reader.disconnect();
  let copied = 0;
  let batches = 0;
  while (copied < 100) {
    const batch = input.slice(copied, copied + 10);
    const txn = await producer.transaction();
    await txn.send({ topic: dst, messages: batch.map((m) => ({ key: m.key, value: m.value.toString().toUpperCase() })) });
    const next = Number(batch[batch.length - 1].offset) + 1;
    await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: src, partitions: [{ partition: 0, offset: String(next) }] }] });
    batches += 1;
    if (batches === 3) {
      await txn.abort();
      continue;
    }
    await txn.commit();
    copied = next;
  }
  await producer.disconnect();
  const out = [];
  const { consumer } = await member(bootstrap, `${prefix}-eos-r`, dst, out, { readUncommitted: false });
  try {
    await until(30000, () => out.length >= 100);
    await sleep(1000); // a value too many would come now
    const values = out.map((r) => r.value);
    check(values.length === 100 && new Set(values).size === 100 && values.every((v) => v.startsWith('V')),
      `read ${values.length} output values`);
  } finally {
    await consumer.disconnect();
  }
  const admin = client.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchOffsets({ groupId, topics: [src] });
    const committed = Number(offsets[0].partitions[0].offset);
    check(committed === 100, `committed input offset ${committed}`);
  } finally {
    await admin.disconnect();
  }
}

async function admin(bootstrap, prefix) {
  const topic = `${prefix}-adm`;
  const client = kafka(bootstrap);
  const adm = client.admin();
  await adm.connect();
  try {
    await adm.createTopics({ topics: [{ topic, numPartitions: 2, replicationFactor: 1, configEntries: [{ name: 'retention.ms', value: '100000' }] }] });
    const retention = async () => {
      const d = await adm.describeConfigs({ resources: [{ type: 2, name: topic, configNames: ['retention.ms'] }], includeSynonyms: false });
      return d.resources[0].configEntries.find((e) => e.configName === 'retention.ms').configValue;
    };
    check(await retention() === '100000', 'retention.ms not as created');
    await adm.alterConfigs({ validateOnly: false, resources: [{ type: 2, name: topic, configEntries: [{ name: 'retention.ms', value: '200000' }] }] });
    for (const end = Date.now() + 10000; await retention() !== '200000'; await sleep(100)) {
      check(Date.now() < end, 'retention.ms not changed'); // Kafka applies a change asynchronously
    }
    await adm.createPartitions({ topicPartitions: [{ topic, count: 4 }] });
    const producer = client.producer();
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ value: `v${i}`, partition: 0 })) });
    await producer.disconnect();
    const meta = await adm.fetchTopicMetadata({ topics: [topic] });
    check(meta.topics[0].partitions.length === 4, 'partitions not added');
    await adm.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: '5' }] });
    const low = await adm.fetchTopicOffsets(topic);
    check(low.find((p) => p.partition === 0).low === '5', 'delete records did not move the start');
    await adm.listGroups();
    await adm.deleteTopics({ topics: [topic] });
    for (const end = Date.now() + 10000; (await adm.listTopics()).includes(topic); await sleep(100)) {
      check(Date.now() < end, 'topic still listed'); // Kafka forgets a deleted topic asynchronously
    }
  } finally {
    await adm.disconnect();
  }
}

const SCENARIOS = { produce_consume: produceConsume, group_resume: groupResume, idempotent, transactional, admin };

run(SCENARIOS);
