// A Kafka Streams 4.3.1 word count with processing.guarantee=exactly_once_v2, for the compatibility
// matrix's application rows (tests/compat/apps/streams_eos.py drives it, kills it with -9 and
// restarts it). It runs until it is killed or gets SIGTERM. Single-file program:
//   java -cp "<kafka apps jars>/*" StreamsWordCount.java <bootstrap> <prefix> <state dir> [classic|streams] [name=value ...]
// The optional fourth argument is Streams' group.protocol (KIP-1071's streams groups with "streams");
// any further name=value arguments are Streams configs (a test's cache size or internal topic configs).
// The grouping by word repartitions, so Streams also creates internal topics and purges the
// repartition topic with DeleteRecords, as a long-running application does.
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Produced;

public class StreamsWordCount {
    public static void main(String[] args) throws InterruptedException {
        String bootstrap = args[0], prefix = args[1], stateDir = args[2];
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, prefix + "-wc");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 500);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        if (args.length > 3) p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, args[3]);
        for (int i = 4; i < args.length; i++) {
            String[] nv = args[i].split("=", 2);
            p.put(nv[0], nv[1]);
        }
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(prefix + "-text")
            .flatMapValues(line -> Arrays.asList(line.split(" ")))
            .groupBy((key, word) -> word)
            .count()
            .toStream()
            .mapValues(String::valueOf)
            .to(prefix + "-counts", Produced.with(Serdes.String(), Serdes.String()));
        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("state " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) done.countDown();
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> { streams.close(); done.countDown(); }));
        streams.start();
        done.await();
    }
}
