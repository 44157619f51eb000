// The compatibility scenarios (tests/compat/scenario.py) with Apache Kafka's Java clients 4.3.1
// (kafka-clients from Maven Central, the bench/kafka jar cache). Run as a single-file program:
//   java -cp "<kafka tools jars>/*" JavaClients.java <scenario> <bootstrap> <prefix>
import java.time.Duration;
import java.util.*;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaClients {
    static class Failed extends RuntimeException {
        Failed(String what) { super(what); }
    }

    static void check(boolean ok, String what) {
        if (!ok) throw new Failed(what);
    }

    static void until(long timeoutMs, BooleanSupplier done, Runnable step) {
        long end = System.currentTimeMillis() + timeoutMs;
        while (!done.getAsBoolean()) {
            check(System.currentTimeMillis() < end, "timed out");
            step.run();
        }
    }

    record Rec(int partition, String key, String value, long offset) {}

    static void checkOrdered(List<Rec> records, int n) {
        List<Integer> values = new ArrayList<>();
        Map<String, Integer> byKey = new HashMap<>();
        Map<Integer, Integer> last = new HashMap<>();
        for (Rec r : records) {
            int i = Integer.parseInt(r.value().substring(1));
            values.add(i);
            Integer p = byKey.putIfAbsent(r.key(), r.partition());
            check(p == null || p == r.partition(), "key " + r.key() + " on two partitions");
            check(last.getOrDefault(r.partition(), -1) < i, "partition " + r.partition() + " out of order at " + r.value());
            last.put(r.partition(), i);
        }
        Collections.sort(values);
        check(values.size() == n, "read " + values.size() + " records, expected " + n);
        for (int i = 0; i < n; i++) check(values.get(i) == i, "expected v0..v" + (n - 1) + " once each");
    }

    static Properties props(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static Admin admin(String bootstrap) { return Admin.create(props(bootstrap)); }

    static void create(String bootstrap, String topic, int partitions, Map<String, String> configs) throws Exception {
        try (Admin a = admin(bootstrap)) {
            a.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs))).all().get();
        }
    }

    static KafkaProducer<String, String> producer(String bootstrap, Map<String, Object> conf) {
        Properties p = props(bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", "5");
        p.putAll(conf);
        return new KafkaProducer<>(p);
    }

    static void produce(String bootstrap, String topic, int start, int n, Map<String, Object> conf) throws Exception {
        try (KafkaProducer<String, String> p = producer(bootstrap, conf)) {
            List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = start; i < start + n; i++) sent.add(p.send(new ProducerRecord<>(topic, "k" + i, "v" + i)));
            for (var f : sent) f.get();
        }
    }

    static KafkaConsumer<String, String> consumer(String bootstrap, String group, Map<String, Object> conf) {
        Properties p = props(bootstrap);
        p.put("group.id", group);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.putAll(conf);
        return new KafkaConsumer<>(p);
    }

    static List<Rec> read(KafkaConsumer<String, String> c, int want) {
        List<Rec> got = new ArrayList<>();
        until(30_000, () -> got.size() >= want, () -> {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500)))
                got.add(new Rec(r.partition(), r.key(), r.value(), r.offset()));
        });
        return got;
    }

    static void produceConsume(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-pc";
        create(bootstrap, topic, 3, Map.of());
        produce(bootstrap, topic, 0, 300, Map.of());
        try (var c = consumer(bootstrap, prefix + "-pc-g", Map.of())) {
            c.subscribe(List.of(topic));
            checkOrdered(read(c, 300), 300);
        }
    }

    static void groupResume(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-gr", group = prefix + "-gr-g";
        create(bootstrap, topic, 2, Map.of());
        var a = consumer(bootstrap, group, Map.of());
        var b = consumer(bootstrap, group, Map.of());
        a.subscribe(List.of(topic));
        b.subscribe(List.of(topic));
        int[] got = {0, 0};
        Runnable step = () -> {
            got[0] += a.poll(Duration.ofMillis(200)).count();
            got[1] += b.poll(Duration.ofMillis(200)).count();
        };
        until(60_000, () -> a.assignment().size() == 1 && b.assignment().size() == 1, step);
        produce(bootstrap, topic, 0, 100, Map.of());
        until(60_000, () -> got[0] + got[1] >= 100, step);
        check(got[0] > 0 && got[1] > 0 && got[0] + got[1] == 100, "members read " + got[0] + " and " + got[1]);
        a.commitSync();
        b.commitSync();
        a.close();
        b.close();
        produce(bootstrap, topic, 100, 50, Map.of());
        try (var c = consumer(bootstrap, group, Map.of())) {
            c.subscribe(List.of(topic));
            List<Rec> records = read(c, 50);
            List<Integer> values = new ArrayList<>();
            for (Rec r : records) values.add(Integer.parseInt(r.value().substring(1)));
            Collections.sort(values);
            check(values.size() == 50 && values.get(0) == 100 && values.get(49) == 149, "did not resume at the commit");
        }
    }

    static void idempotent(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-idem";
        create(bootstrap, topic, 1, Map.of());
        produce(bootstrap, topic, 0, 200, Map.of("enable.idempotence", "true", "acks", "all"));
        try (var c = consumer(bootstrap, prefix + "-idem-g", Map.of())) {
            c.subscribe(List.of(topic));
            checkOrdered(read(c, 200), 200);
        }
    }

    static void transactional(String bootstrap, String prefix) throws Exception {
        String src = prefix + "-in", dst = prefix + "-out", group = prefix + "-eos-g";
        create(bootstrap, src, 1, Map.of());
        create(bootstrap, dst, 1, Map.of());
        produce(bootstrap, src, 0, 100, Map.of());
        TopicPartition tp = new TopicPartition(src, 0);
        try (var c = consumer(bootstrap, group, Map.of("isolation.level", "read_committed", "max.poll.records", "10"));
             var p = producer(bootstrap, Map.of("transactional.id", prefix + "-txn"))) {
            c.assign(List.of(tp));
            c.seek(tp, 0);
            p.initTransactions();
            long copied = 0;
            int batches = 0;
            while (copied < 100) {
                List<ConsumerRecord<String, String>> records = c.poll(Duration.ofSeconds(1)).records(tp);
                if (records.isEmpty()) continue;
                p.beginTransaction();
                for (var r : records) p.send(new ProducerRecord<>(dst, r.key(), r.value().toUpperCase()));
                long next = records.get(records.size() - 1).offset() + 1;
                p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(next)), c.groupMetadata());
                batches++;
                if (batches == 3) {
                    p.abortTransaction();
                    c.seek(tp, records.get(0).offset()); // redo from a concrete offset
                    continue;
                }
                p.commitTransaction();
                copied = next;
            }
        }
        TopicPartition out = new TopicPartition(dst, 0);
        try (var r = consumer(bootstrap, prefix + "-eos-r", Map.of("isolation.level", "read_committed"))) {
            r.assign(List.of(out));
            r.seek(out, 0);
            List<Rec> records = new ArrayList<>(read(r, 100));
            for (var m : r.poll(Duration.ofSeconds(1))) records.add(new Rec(m.partition(), m.key(), m.value(), m.offset()));
            Set<String> values = new HashSet<>();
            for (Rec x : records) values.add(x.value());
            check(records.size() == 100 && values.size() == 100, "read " + records.size() + " output values");
        }
        try (Admin a = admin(bootstrap)) {
            var offsets = a.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            check(offsets.get(tp).offset() == 100, "committed input offset " + offsets.get(tp).offset());
        }
    }

    static void adminScenario(String bootstrap, String prefix) throws Exception {
        String topic = prefix + "-adm";
        try (Admin a = admin(bootstrap)) {
            a.createTopics(List.of(new NewTopic(topic, 2, (short) 1).configs(Map.of("retention.ms", "100000")))).all().get();
            ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
            check("100000".equals(a.describeConfigs(List.of(res)).all().get().get(res).get("retention.ms").value()),
                    "retention.ms not as created");
            a.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "200000"),
                    AlterConfigOp.OpType.SET)))).all().get();
            until(10_000, () -> { // Kafka applies a change asynchronously
                try {
                    return "200000".equals(a.describeConfigs(List.of(res)).all().get().get(res).get("retention.ms").value());
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, () -> {});
            a.createPartitions(Map.of(topic, NewPartitions.increaseTo(4))).all().get();
            try (var p = producer(bootstrap, Map.of())) {
                for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(topic, 0, null, "v" + i)).get();
            }
            check(a.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size() == 4,
                    "partitions not added");
            TopicPartition tp0 = new TopicPartition(topic, 0);
            long low = a.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(5))).lowWatermarks().get(tp0).get().lowWatermark();
            check(low == 5, "delete records answered " + low);
            a.listGroups().all().get();
            a.deleteTopics(List.of(topic)).all().get();
            until(10_000, () -> {
                try {
                    return !a.listTopics().names().get().contains(topic);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }, () -> {});
        }
    }

    interface Scenario {
        void run(String bootstrap, String prefix) throws Exception;
    }

    public static void main(String[] args) {
        Map<String, Scenario> scenarios = Map.of("produce_consume", JavaClients::produceConsume,
                "group_resume", JavaClients::groupResume, "idempotent", JavaClients::idempotent,
                "transactional", JavaClients::transactional, "admin", JavaClients::adminScenario);
        Scenario s = scenarios.get(args[0]);
        if (s == null) {
            System.out.println("n/a: " + args[0] + " is not supported by this client");
            System.exit(3);
        }
        try {
            s.run(args[1], args[2]);
            System.out.println("ok");
            System.exit(0);
        } catch (Throwable e) {
            Throwable cause = e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
            System.out.println("FAILED: " + (cause instanceof Failed ? cause.getMessage() : cause.toString()));
            System.exit(1);
        }
    }
}
