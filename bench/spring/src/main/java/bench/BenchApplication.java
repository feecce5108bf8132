package bench;

import io.awspring.cloud.sqs.listener.SqsMessageListenerContainer;
import io.awspring.cloud.sqs.listener.acknowledgement.handler.AcknowledgementMode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentLinkedQueue;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.sqs.SqsAsyncClient;

/**
 * The Spring Cloud AWS SQS peer of sqsworker's side-by-side benchmark. The bench starts it
 * with the environment below after loading the queue and stops it with SIGTERM.
 *
 * <ul>
 *   <li>BENCH_QUEUE_URL: the queue
 *   <li>BENCH_ENDPOINT: the SQS endpoint (the bench's counting proxy)
 *   <li>BENCH_CONCURRENCY: maxConcurrentMessages (default 20)
 *   <li>BENCH_STARTS_FILE: set by the bench's latency runs only (-arrival-rate): each
 *       listener call notes its start in memory (the body's key, wall-clock time) and a
 *       shutdown hook writes the notes to this file, one JSON line each, in the shape the Go
 *       workers write ({"event":"call","key":...,"t":ms,"t_ns":ns}). Unset (the throughput
 *       runs): nothing is noted.
 * </ul>
 *
 * One SqsMessageListenerContainer with maxConcurrentMessages = concurrency and
 * maxMessagesPerPoll 10, acknowledgement ON_SUCCESS with its default batching (a
 * DeleteMessageBatch per 10 acknowledgements or per second).
 */
@SpringBootApplication
public class BenchApplication {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String STARTS_FILE = System.getenv("BENCH_STARTS_FILE");
  private static final ConcurrentLinkedQueue<Start> STARTS = new ConcurrentLinkedQueue<>();

  /** One listener call's start: the job's key and the wall clock (Instant.now()). */
  record Start(String key, Instant at) {}

  public static void main(String[] args) {
    if (STARTS_FILE != null) {
      // Shutdown hooks run side by side: this one does not wait for Spring's to stop the
      // container (the bench sends SIGTERM and SIGKILLs after 5 s).
      Runtime.getRuntime().addShutdownHook(new Thread(BenchApplication::writeStarts, "bench-starts"));
    }
    SpringApplication.run(BenchApplication.class, args);
  }

  /** Writes the noted starts to BENCH_STARTS_FILE. */
  static void writeStarts() {
    try (Writer out = Files.newBufferedWriter(Path.of(STARTS_FILE), StandardCharsets.UTF_8)) {
      for (Start start : STARTS) {
        long nanos = start.at().getEpochSecond() * 1_000_000_000L + start.at().getNano();
        out.write(JSON.writeValueAsString(JSON.createObjectNode()
            .put("event", "call")
            .put("key", start.key())
            .put("t", start.at().toEpochMilli())
            .put("t_ns", nanos)));
        out.write('\n');
      }
    } catch (IOException e) {
      throw new UncheckedIOException("writing " + STARTS_FILE, e);
    }
  }

  @Bean
  SqsAsyncClient sqsAsyncClient() {
    String region = System.getenv().getOrDefault("AWS_REGION", "us-east-1");
    String key = System.getenv().getOrDefault("AWS_ACCESS_KEY_ID", "test");
    String secret = System.getenv().getOrDefault("AWS_SECRET_ACCESS_KEY", "test");
    return SqsAsyncClient.builder()
        .endpointOverride(URI.create(System.getenv("BENCH_ENDPOINT")))
        .region(Region.of(region))
        .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key, secret)))
        .build();
  }

  @Bean
  SqsMessageListenerContainer<String> container(SqsAsyncClient client) {
    int concurrency = Integer.parseInt(System.getenv().getOrDefault("BENCH_CONCURRENCY", "20"));
    return SqsMessageListenerContainer.<String>builder()
        .sqsAsyncClient(client)
        .queueNames(System.getenv("BENCH_QUEUE_URL"))
        .configure(options -> options
            .maxConcurrentMessages(concurrency)
            .maxMessagesPerPoll(10)
            .pollTimeout(Duration.ofSeconds(20))
            .acknowledgementMode(AcknowledgementMode.ON_SUCCESS))
        .messageListener(message -> handle(message.getPayload()))
        .build();
  }

  /** The job, as every contender's: a body {"key":...,"sleep_ms":N} waits N ms. */
  static void handle(String body) {
    Instant startedAt = STARTS_FILE != null ? Instant.now() : null;
    JsonNode job;
    try {
      job = JSON.readTree(body);
    } catch (Exception e) {
      throw new IllegalArgumentException("malformed body: " + body, e);
    }
    if (startedAt != null) {
      STARTS.add(new Start(job.path("key").asText(), startedAt));
    }
    long ms = job.path("sleep_ms").asLong();
    if (ms > 0) {
      try {
        Thread.sleep(ms);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
