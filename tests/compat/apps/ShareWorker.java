// One KafkaShareConsumer (Kafka 4.3.1's Java client, KIP-932) for tests/integration/test_share_groups_java.py.
// Run as a single-file program on the application jars: java -cp '<apps>/*' ShareWorker.java ...
//
//   ShareWorker <bootstrap> <topic> <group> <client id> work|hold <seconds> [max.poll.records]
//
// work: acknowledge every record explicitly, REJECT those whose value starts with "poison", ACCEPT the
//       rest, commitSync, and only then print "ACCEPTED <partition> <offset> <delivery count>" for
//       each record the broker confirmed ("REJECTED ..." likewise); a commit that fails or is not
//       answered prints "UNKNOWN <partition> <offset>" (the broker may or may not have it).
// hold: poll until records come, print "HELD <partition> <offset>", and never acknowledge them: the
//       acquisition locks run out and the records go to the other members.
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareWorker {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], clientId = args[3], mode = args[4];
        long end = System.currentTimeMillis() + Long.parseLong(args[5]) * 1000;
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("client.id", clientId);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        if (args.length > 6) p.put("max.poll.records", args[6]);
        try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            System.out.println("STARTED " + clientId);
            System.out.flush();
            while (System.currentTimeMillis() < end) {
                ConsumerRecords<String, String> records;
                try {
                    records = c.poll(Duration.ofMillis(500));
                } catch (KafkaException e) {
                    System.out.println("POLL-ERROR " + e);
                    continue;
                }
                if (records.isEmpty()) continue;
                if (mode.equals("hold")) {
                    for (ConsumerRecord<String, String> r : records) System.out.println("HELD " + r.partition() + " " + r.offset());
                    System.out.flush();
                    while (System.currentTimeMillis() < end) Thread.sleep(200);   // never acknowledged
                    break;
                }
                List<ConsumerRecord<String, String>> done = new ArrayList<>();
                for (ConsumerRecord<String, String> r : records) {
                    c.acknowledge(r, r.value().startsWith("poison") ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT);
                    done.add(r);
                }
                Map<TopicIdPartition, Optional<KafkaException>> result;
                try {
                    result = c.commitSync(Duration.ofSeconds(15));
                } catch (KafkaException e) {
                    for (ConsumerRecord<String, String> r : done) System.out.println("UNKNOWN " + r.partition() + " " + r.offset());
                    System.out.flush();
                    continue;
                }
                for (ConsumerRecord<String, String> r : done) {
                    Optional<KafkaException> outcome = null;
                    for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : result.entrySet()) {
                        if (e.getKey().topic().equals(r.topic()) && e.getKey().partition() == r.partition()) outcome = e.getValue();
                    }
                    String what = r.value().startsWith("poison") ? "REJECTED" : "ACCEPTED";
                    if (outcome == null || outcome.isPresent()) {
                        System.out.println("UNKNOWN " + r.partition() + " " + r.offset());
                    } else {
                        System.out.println(what + " " + r.partition() + " " + r.offset() + " " + r.deliveryCount().orElse((short) -1));
                    }
                }
                System.out.flush();
            }
        }
        System.out.println("CLOSED " + clientId);
    }
}
