// T2 of the benchmark (bench/harness): transactions of Kafka's Java producer 4.3.1, back to back.
// Each transaction: beginTransaction, `records` sends, commitTransaction; its latency runs from
// begin to the commit's return. The client speaks transactions v2 (KIP-890) when the broker's
// transaction.version is finalized at 2, v1 below: the harness sets the level before the run.
// Run as a single-file program:
//   java -cp "<kafka tools jars>/*" TxnBench.java <bootstrap> <topic> <transactional.id> <warmup> <transactions> <records>
// Prints one JSON line.
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnBench {
    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1], txnId = args[2];
        int warmup = Integer.parseInt(args[3]), transactions = Integer.parseInt(args[4]);
        int records = Integer.parseInt(args[5]);
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        byte[] value = new byte[1024];
        new Random(42).nextBytes(value);
        long[] latencies = new long[transactions];
        long started = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            for (int t = -warmup; t < transactions; t++) {
                if (t == 0) started = System.nanoTime();
                long t0 = System.nanoTime();
                producer.beginTransaction();
                for (int r = 0; r < records; r++) producer.send(new ProducerRecord<>(topic, value));
                producer.commitTransaction();
                if (t >= 0) latencies[t] = System.nanoTime() - t0;
            }
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        Arrays.sort(latencies);
        System.out.printf(Locale.ROOT,
            "{\"transactions\": %d, \"records_per_txn\": %d, \"seconds\": %.3f, \"txn_per_s\": %.1f, "
            + "\"commit_p50_ms\": %.3f, \"commit_p99_ms\": %.3f}%n",
            transactions, records, seconds, transactions / seconds,
            latencies[transactions / 2] / 1e6, latencies[Math.min(transactions - 1, (int) (transactions * 0.99))] / 1e6);
    }
}
