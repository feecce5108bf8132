"""The Python peer of the claim-check interoperability tests.

It sends and receives through the AWS SQS extended client for Python
(amazon-sqs-extended-client), configured as its README shows, against the endpoints in
the environment (AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL_S3 from localstack/env).

  python extended_client.py send QUEUE_URL BUCKET [legacy] < body
      sends the body read from stdin (the library moves it to S3 above 256 KiB) and
      prints {"MessageId": ...}; with "legacy", in the legacy format
      (use_legacy_attribute: SQSLargePayloadSize and the MessageS3Pointer class)
  python extended_client.py receive QUEUE_URL BUCKET WAIT_SECONDS
      receives one message through the library (which reads the payload from S3), and
      prints {"MessageId", "Body", "MessageAttributes"}, or {} when none arrived within
      WAIT_SECONDS; the message is not deleted.
"""

import json
import os
import sys

# botocore reads the region from AWS_DEFAULT_REGION, not AWS_REGION (which the Go SDK and
# localstack/env use); the library's S3 client is made by the same session.
if os.environ.get("AWS_REGION"):
    os.environ.setdefault("AWS_DEFAULT_REGION", os.environ["AWS_REGION"])

import boto3  # noqa: E402
import sqs_extended_client  # noqa: E402,F401  (replaces boto3's Session with the extended one)


def client(bucket, legacy=False):
    sqs = boto3.client("sqs")
    sqs.large_payload_support = bucket
    sqs.use_legacy_attribute = legacy
    return sqs


def send(queue_url, bucket, mode=""):
    body = sys.stdin.buffer.read().decode("utf-8")
    response = client(bucket, mode == "legacy").send_message(QueueUrl=queue_url, MessageBody=body)
    print(json.dumps({"MessageId": response["MessageId"]}))


def receive(queue_url, bucket, wait_seconds):
    response = client(bucket).receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=1,
        WaitTimeSeconds=int(wait_seconds),
        MessageAttributeNames=["All"],
    )
    messages = response.get("Messages", [])
    if not messages:
        print("{}")
        return
    message = messages[0]
    print(json.dumps({
        "MessageId": message["MessageId"],
        "Body": message["Body"],
        "MessageAttributes": message.get("MessageAttributes", {}),
    }))


def main():
    command, arguments = sys.argv[1], sys.argv[2:]
    if command == "send":
        send(*arguments)
    elif command == "receive":
        receive(*arguments)
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main()
