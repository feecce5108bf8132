// The sqs-consumer peer of sqsworker's side-by-side benchmark. The bench (bench/, `go run .`)
// installs this folder with `npm ci`, starts this script after loading the queue, measures it
// through its counting proxy and stops it with SIGTERM.
//
// Configuration (environment):
//   BENCH_QUEUE_URL   the queue
//   BENCH_ENDPOINT    the SQS endpoint (the bench's counting proxy)
//   BENCH_INSTANCES   Consumer instances (default 2: 2 x batchSize 10 = concurrency 20)
//   BENCH_BATCH_SIZE  batchSize of each Consumer (default 10)
//   BENCH_STARTS_FILE set by the bench's latency runs only (-arrival-rate): each handler call
//                     notes its start in memory (the body's key, wall-clock time) and the
//                     notes are written to this file, one JSON line each, on SIGTERM, in the
//                     shape the Go workers write ({"event":"call","key":...,"t":ms,"t_ns":ns}).
//                     Unset (the throughput runs): nothing is noted.
//
// Fairest configuration for a concurrency of 20: two Consumers with batchSize 10, each batch
// handled with handleMessageBatch running the messages in parallel (Promise.all), so deletes
// are batched (DeleteMessageBatch, as in every other contender). Like handleMessage, a
// Consumer polls again only after its whole batch is handled.
import { Consumer } from "sqs-consumer";
import { SQSClient } from "@aws-sdk/client-sqs";
import { writeFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const queueUrl = process.env.BENCH_QUEUE_URL;
const endpoint = process.env.BENCH_ENDPOINT;
const instances = Number(process.env.BENCH_INSTANCES || 2);
const batchSize = Number(process.env.BENCH_BATCH_SIZE || 10);
const startsFile = process.env.BENCH_STARTS_FILE;
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

// The handler starts of a latency run: [key, wall-clock ms with a fraction] pairs.
// performance.timeOrigin + performance.now() is the wall clock to the microsecond (Date.now()
// has whole milliseconds).
const starts = [];

// The job: the same as every contender's. A body {"key":...,"sleep_ms":N} waits N ms.
async function handle(message) {
  const startedAt = startsFile ? performance.timeOrigin + performance.now() : 0;
  const { key, sleep_ms: ms } = JSON.parse(message.Body);
  if (startsFile) starts.push([key, startedAt]);
  if (ms > 0) await sleep(ms);
}

function writeStarts() {
  if (!startsFile) return;
  const lines = starts.map(([key, at]) =>
    JSON.stringify({ event: "call", key, t: Math.floor(at), t_ns: Math.round(at * 1e6) }) + "\n");
  writeFileSync(startsFile, lines.join(""));
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
  try {
    writeStarts();
  } catch (err) {
    console.error("consumer.mjs: writing", startsFile, "failed:", err.message);
    process.exit(1);
  }
  process.exit(0);
}
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

for (const consumer of consumers) consumer.start();
console.error(`consumer.mjs: ${instances} consumers, batchSize ${batchSize}, started`);
