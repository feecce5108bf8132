// Capture: a manual step, not part of make test (see README.md beside this file).
//
// It sends and receives through amazon-sqs-java-extended-client-lib 2.1.1, configured as
// its README shows, against the endpoints in the environment (AWS_ENDPOINT_URL_SQS and
// AWS_ENDPOINT_URL_S3 from localstack/env), and prints what it saw as JSON on stdout:
//
//   java Capture send QUEUE_URL BUCKET legacy|current < body
//       sends the body through the extended client (always through S3), with its default
//       configuration ("legacy": the attribute name it writes by default) or with
//       withLegacyReservedAttributeNameDisabled() ("current"); then receives the message
//       with a plain SQS client and prints the bytes on the queue: {"Body": ...,
//       "MessageAttributes": {NAME: {"DataType": ..., "StringValue": ...}}}. The message
//       is made visible again.
//   java Capture receive QUEUE_URL BUCKET
//       receives one message through the extended client (which reads the payload from
//       S3) and prints {"Body": ..., "MessageAttributes": ...}, or {} when none arrived
//       within 10 s; the message is not deleted.
import com.amazon.sqs.javamessaging.AmazonSQSExtendedClient;
import com.amazon.sqs.javamessaging.ExtendedClientConfiguration;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.sqs.SqsClient;
import software.amazon.awssdk.services.sqs.model.ChangeMessageVisibilityRequest;
import software.amazon.awssdk.services.sqs.model.Message;
import software.amazon.awssdk.services.sqs.model.MessageAttributeValue;
import software.amazon.awssdk.services.sqs.model.ReceiveMessageRequest;
import software.amazon.awssdk.services.sqs.model.SendMessageRequest;

public final class Capture {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        String command = args[0], queueUrl = args[1], bucket = args[2];
        SqsClient sqs = SqsClient.builder().endpointOverride(URI.create(System.getenv("AWS_ENDPOINT_URL_SQS"))).build();
        S3Client s3 = S3Client.builder()
                .endpointOverride(URI.create(System.getenv("AWS_ENDPOINT_URL_S3")))
                .forcePathStyle(true)
                .build();
        ExtendedClientConfiguration configuration = new ExtendedClientConfiguration()
                .withPayloadSupportEnabled(s3, bucket)
                .withAlwaysThroughS3(true);
        if (command.equals("send") && args[3].equals("current")) {
            configuration = configuration.withLegacyReservedAttributeNameDisabled();
        }
        AmazonSQSExtendedClient extended = new AmazonSQSExtendedClient(sqs, configuration);
        switch (command) {
            case "send" -> {
                String body = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
                extended.sendMessage(SendMessageRequest.builder().queueUrl(queueUrl).messageBody(body).build());
                Message raw = receiveOne(sqs, queueUrl);
                sqs.changeMessageVisibility(ChangeMessageVisibilityRequest.builder()
                        .queueUrl(queueUrl).receiptHandle(raw.receiptHandle()).visibilityTimeout(0).build());
                print(raw);
            }
            case "receive" -> {
                List<Message> messages = extended.receiveMessage(ReceiveMessageRequest.builder()
                        .queueUrl(queueUrl).waitTimeSeconds(10).maxNumberOfMessages(1)
                        .messageAttributeNames("All").build()).messages();
                if (messages.isEmpty()) {
                    System.out.println("{}");
                } else {
                    print(messages.get(0));
                }
            }
            default -> throw new IllegalArgumentException("unknown command " + command);
        }
    }

    private static Message receiveOne(SqsClient sqs, String queueUrl) {
        for (int i = 0; i < 10; i++) {
            List<Message> messages = sqs.receiveMessage(ReceiveMessageRequest.builder()
                    .queueUrl(queueUrl).waitTimeSeconds(2).maxNumberOfMessages(1)
                    .messageAttributeNames("All").build()).messages();
            if (!messages.isEmpty()) {
                return messages.get(0);
            }
        }
        throw new IllegalStateException("the sent message did not arrive");
    }

    private static void print(Message message) throws Exception {
        Map<String, Object> attributes = new TreeMap<>();
        for (Map.Entry<String, MessageAttributeValue> entry : message.messageAttributes().entrySet()) {
            Map<String, String> value = new LinkedHashMap<>();
            value.put("DataType", entry.getValue().dataType());
            value.put("StringValue", entry.getValue().stringValue());
            attributes.put(entry.getKey(), value);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("Body", message.body());
        out.put("MessageAttributes", attributes);
        System.out.println(JSON.writeValueAsString(out));
    }
}
