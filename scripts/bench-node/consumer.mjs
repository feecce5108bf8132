// The sqs-consumer peer of sqsworker's side-by-side benchmark. The bench (bench/, `go run .`)
// installs this folder with `npm ci`, starts this script after loading the queue, measures it
// through its counting proxy and stops it with SIGTERM.
//
// Configuration (environment):
//   BENCH_QUEUE_URL   the queue
//   BENCH_ENDPOINT    the SQS endpoint (the bench's counting proxy)
//   BENCH_INSTANCES   Consumer instances (default 2: 2 x batchSize 10 = concurrency 20)
//   BENCH_BATCH_SIZE  batchSize of each Consumer (default 10)
//
// Fairest configuration for a concurrency of 20: two Consumers with batchSize 10, each batch
// handled with handleMessageBatch running the messages in parallel (Promise.all), so deletes
// are batched (DeleteMessageBatch, as in every other contender). Like handleMessage, a
// Consumer polls again only after its whole batch is handled.
import { Consumer } from "sqs-consumer";
import { SQSClient } from "@aws-sdk/client-sqs";

const queueUrl = process.env.BENCH_QUEUE_URL;
const endpoint = process.env.BENCH_ENDPOINT;
const instances = Number(process.env.BENCH_INSTANCES || 2);
const batchSize = Number(process.env.BENCH_BATCH_SIZE || 10);
if (!queueUrl || !endpoint) {
  console.error("consumer.mjs: BENCH_QUEUE_URL and BENCH_ENDPOINT are required");
  process.exit(2);
}

const sqs = new SQSClient({
  endpoint,
  region: process.env.AWS_REGION || "us-east-1",
  credentials: {
    accessKeyId: process.env.AWS_ACCESS_KEY_ID || "test",
    secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY || "test",
  },
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// The job: the same as every contender's. A body {"key":...,"sleep_ms":N} waits N ms.
async function handle(message) {
  const { sleep_ms: ms } = JSON.parse(message.Body);
  if (ms > 0) await sleep(ms);
}

const consumers = [];
for (let i = 0; i < instances; i++) {
  const consumer = Consumer.create({
    queueUrl,
    sqs,
    batchSize,
    waitTimeSeconds: 20,
    handleMessageBatch: async (messages) => {
      await Promise.all(messages.map(handle));
      return messages;
    },
  });
  consumer.on("error", (err) => console.error("consumer.mjs: error:", err.message));
  consumer.on("processing_error", (err) => console.error("consumer.mjs: processing error:", err.message));
  consumers.push(consumer);
}

function stop() {
  for (const consumer of consumers) consumer.stop();
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

for (const consumer of consumers) consumer.start();
console.error(`consumer.mjs: ${instances} consumers, batchSize ${batchSize}, started`);
