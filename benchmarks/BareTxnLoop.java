// The Java client's own bare transactional loop for benchmarks/client_bench.py: begin,
// TXN_SIZE sends of a fixed value, commit, until N records; no callbacks, no checks but
// the ones commitTransaction() makes. ProducerPerformance cannot make transactions of a
// given number of records (only --transaction-duration-ms), so the transactional cell
// compares 10-record transactions with 10-record transactions.
//
// Run as a single-file source program (Java 11+), on the java-generator classpath:
//   java -cp CP benchmarks/BareTxnLoop.java BOOTSTRAP TOPIC N SIZE TXN_SIZE [key=value ...]
// Prints one line: {"seconds": S, "transactions": T}; the clock starts after
// initTransactions() and stops after the last commit.

import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class BareTxnLoop {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        String topic = args[1];
        int n = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        int txnSize = Integer.parseInt(args[4]);
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        props.put("transactional.id", "cbench-java-" + System.nanoTime());
        byte[] value = new byte[size];
        java.util.Arrays.fill(value, (byte) 'x');
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.initTransactions();
            long start = System.nanoTime();
            int sent = 0, txns = 0;
            while (sent < n) {
                producer.beginTransaction();
                for (int i = 0; i < txnSize && sent < n; i++, sent++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, value));
                }
                producer.commitTransaction();
                txns++;
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.println("{\"seconds\": " + seconds + ", \"transactions\": " + txns + "}");
        }
    }
}
