package verifier.apps;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.Options;

/**
 * Settings a Kafka Streams user may set, as options of the streams mode (issue 50,
 * KAFKA-20685): {@code --write-buffer-kb N} (RocksDB's memtable size, through a
 * {@code rocksdb.config.setter}: a small one makes RocksDB flush memtables to disk while a
 * transaction is open, so writes of a transaction later aborted reach disk),
 * {@code --cache-bytes N} ({@code statestore.cache.max.bytes}: 0 puts every update into
 * the store at once, not at the commit), {@code --commit-ms N} ({@code commit.interval.ms},
 * how long a transaction stays open) and {@code --buckets N} (how many keys the count
 * groups into, {@link CountPerKey}: many keys make the keys of one transaction new since
 * the last restoration, so a committed changelog record cannot overwrite an aborted value
 * on restore). Absent options keep Streams' defaults.
 */
final class StreamsTuning {
    /** the config key the setter reads (Streams hands the setter its own configs) */
    static final String WRITE_BUFFER = "verifier.rocksdb.write.buffer.bytes";

    private StreamsTuning() {
    }

    /** Add the options given in {@code args} to {@code p}; an unknown value is a usage error. */
    static void apply(List<String> args, Properties p) {
        String kb = Main.option(args, "--write-buffer-kb", null);
        if (kb != null) {
            p.put(WRITE_BUFFER, String.valueOf(Long.parseLong(kb) * 1024));
            p.put("rocksdb.config.setter", SmallWriteBuffer.class.getName());
        }
        String cache = Main.option(args, "--cache-bytes", null);
        if (cache != null) {
            p.put("statestore.cache.max.bytes", String.valueOf(Long.parseLong(cache)));
        }
        String commit = Main.option(args, "--commit-ms", null);
        if (commit != null) {
            p.put("commit.interval.ms", String.valueOf(Long.parseLong(commit)));
        }
    }

    static int buckets(List<String> args) {
        return Integer.parseInt(Main.option(args, "--buckets", String.valueOf(CountPerKey.BUCKETS)));
    }

    /** RocksDB's write buffer (memtable) of every store at {@link #WRITE_BUFFER} bytes. */
    public static final class SmallWriteBuffer implements RocksDBConfigSetter {
        @Override
        public void setConfig(String storeName, Options options, Map<String, Object> configs) {
            Object bytes = configs.get(WRITE_BUFFER);
            if (bytes != null) {
                // RocksDB clips it to at least 64 KB
                options.setWriteBufferSize(Long.parseLong(bytes.toString()));
            }
        }

        @Override
        public void close(String storeName, Options options) {
        }
    }
}
