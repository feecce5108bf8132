package bench;

import io.awspring.cloud.sqs.listener.SqsMessageListenerContainer;
import io.awspring.cloud.sqs.listener.acknowledgement.handler.AcknowledgementMode;
import java.net.URI;
import java.time.Duration;
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
 * </ul>
 *
 * One SqsMessageListenerContainer with maxConcurrentMessages = concurrency and
 * maxMessagesPerPoll 10, acknowledgement ON_SUCCESS with its default batching (a
 * DeleteMessageBatch per 10 acknowledgements or per second).
 */
@SpringBootApplication
public class BenchApplication {
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) {
    SpringApplication.run(BenchApplication.class, args);
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
    JsonNode job;
    try {
      job = JSON.readTree(body);
    } catch (Exception e) {
      throw new IllegalArgumentException("malformed body: " + body, e);
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
