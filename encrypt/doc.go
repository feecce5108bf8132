// Package encrypt encrypts job payloads with KMS envelope encryption: the producer
// encrypts each body with AES-256-GCM under a data key from KMS GenerateDataKey, and
// the worker decrypts the data key with KMS Decrypt, only for the keys its
// configuration allows. The plaintext never travels in SQS, in the dead-letter queue or
// in a claim-check object in S3, and a tool prints it only when asked and allowed by
// KMS (`sqsworker dlq peek --decrypt`).
//
// Producer: set producer.Config.Encrypter to an [Encrypter]. Worker: put
// [Decrypter.Middleware] around the mux, inside the claim-check resolver and the
// middlewares that re-send a message as received (sqsworker.DelayMiddleware).
//
// # Format (version 1)
//
// An encrypted message has one extra message attribute,
// [github.com/sqsworker/sqsworker.AttributeEncryption] ("payload-encryption",
// String): the base64 (standard, padded) of the header
//
//	byte 0       version, 1
//	byte 1       algorithm: 1 = the whole body, 2 = named fields (AES-256-GCM,
//	             96-bit nonce, 128-bit tag)
//	bytes 2-13   the nonce, random per message
//	uint16 + n   the KMS key ARN (GenerateDataKey's KeyId), UTF-8
//	uint16 + n   the key material id (GenerateDataKey's KeyMaterialId), empty if none
//	uint16 + n   the encrypted data key (GenerateDataKey's CiphertextBlob)
//	uint16 + n   algorithm 2 only: the encrypted field names, newline-separated
//
// (each uint16 a big-endian length, each field at most 4,096 bytes). With algorithm 1
// the body is the base64 (standard, padded) of the AES-GCM ciphertext and tag, about
// 4/3 of the plaintext's size. With algorithm 2 (EncrypterConfig.Fields, the
// field-level form modelled on Sidekiq Enterprise's secret bag) the body is a JSON
// object whose named top-level fields each hold a JSON string, the base64 of that
// value's ciphertext and tag, under the nonce with the field's index (from 1) XORed
// into its last 4 bytes; the other fields stay in clear and are not authenticated.
//
// The attribute is one of the 10 that SQS allows, counted by the producer's attribute
// budget. Its value was 256 bytes on moto (a 75-byte key ARN, a 96-byte encrypted data
// key, no key material id); KMS's encrypted data keys and key material ids are longer,
// so count on about 500 bytes on AWS, all of which SQS counts toward the message size.
// Encryption costs about 7 µs of CPU per 1 KiB body on each side with the data key
// cached (BenchmarkEncrypt1KiB, BenchmarkDecrypt1KiB on a 2-core AMD EPYC).
//
// # Bindings
//
// The data key is encrypted by KMS under the encryption context
// {"sqsworker:purpose": "job-payload", "sqsworker:job-type": TYPE} (the type left out
// when the job has none), so KMS, CloudTrail and key policies
// (kms:EncryptionContext:sqsworker:job-type) see each job type, and a ciphertext whose
// job-type attribute was changed does not decrypt. The AES-GCM additional data is the
// header with the job type and the job id (the [sqsworker.AttributeJobID] attribute),
// and for a field its name, so a body or field moved to another job, field or header
// does not open either. The
// queue is not bound: a job keeps its ciphertext through the dead-letter queue and a
// redrive to another queue.
//
// # Keys and rotation
//
// Producers name a key (an alias works); the envelope carries its ARN. Workers allow key
// ARNs (DecrypterConfig.AllowedKeys) and call Decrypt with KeyId set to the key the
// envelope names, after checking it is allowed, so a hostile message cannot make the
// worker use another key. KMS's own rotation (EnableKeyRotation, RotateKeyOnDemand)
// keeps the key ARN, so nothing changes here; moving producers to a new key means
// allowing both keys on the workers until the old key's jobs are gone.
//
// The design follows the AWS Encryption SDK's message format and data key caching
// (https://docs.aws.amazon.com/encryption-sdk/latest/developer-guide/), in a smaller
// form a message attribute can hold; it is not compatible with that SDK.
package encrypt
