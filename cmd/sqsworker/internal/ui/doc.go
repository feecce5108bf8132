// Package ui is the operations page of the sqsworker CLI (`sqsworker ui`): a small web
// server that shows every configured queue (depth, in flight, delayed, dead-letter
// queue depth, throughput and failure rate, refreshed live), browses dead-letter
// queues grouped by failure reason, redrives them (a filtered client-side move with a
// dry run first, or SQS's native message move task), looks up and releases
// idempotency records, shows a job's record by its id ([Config.Jobs], linked from a dead
// letter's job-id attribute), and shows a transactional outbox ([Config.Outbox]): its backlog,
// its failed entries with their reasons and attempts, the FIFO message groups they park,
// and Retry and Skip (confirmed first) of a failed entry. It is a front end only: the
// work is done by the redrive, idempotency, jobs and outbox packages, exactly as the
// CLI's `redrive`, `dlq`, `idempotency`, `jobs` and `outbox` commands do it.
//
// # How it is built
//
// Pages are rendered on the server with html/template (contextual escaping of every
// message body, attribute and error text) from templates embedded in the binary with
// embed.FS, plus one small hand-written script (static/refresh.js) that polls the JSON
// snapshot for the live counts. There is no front-end framework and no build step: there
// is nothing to build, nothing to keep up to date and nothing to audit beyond these
// files, and the CLI stays one self-contained binary.
//
// # Security
//
// The page moves and deletes messages and idempotency records with the operator's AWS
// credentials, so it is meant for one audience: the operator's browser. Every request
// passes [Guard.Protect]:
//
//   - the Host header must name the address the page listens on (127.0.0.1, localhost
//     or [::1] with its port, or the configured host), which defeats DNS rebinding: a
//     hostile site that points its own name at 127.0.0.1 sends its name as Host;
//   - every request, on loopback too, must carry the access token ([Config.AccessToken];
//     random by default, [Server.AccessToken]), or any local user or process could act
//     with the operator's credentials. It is presented once, in a GET as ?token=...,
//     which sets an HttpOnly, SameSite=Strict session cookie (a random value per
//     process, not the token; Secure over TLS) and redirects to the same page without
//     the token; scripts send Authorization: Bearer TOKEN. Without it every route,
//     the POST actions included, answers 401. Secrets are compared in constant time;
//   - every state-changing action is a POST route (a GET of it answers 405 and changes
//     nothing), and a POST must be same-origin (net/http's CrossOriginProtection, on
//     Sec-Fetch-Site and Origin: another port of 127.0.0.1 is the same site, so
//     SameSite=Strict still sends the cookie there, but not the same origin) and carry
//     the per-process token that only the page's own forms hold (a random value made at
//     start; a restart invalidates old pages);
//   - responses forbid framing and foreign scripts (Content-Security-Policy), referrers
//     and caching.
//
// The command serves the page on a loopback address unless told otherwise (--public),
// and then only over TLS, so that neither the token nor the cookie crosses a network
// in clear text.
//
// # SQS calls
//
// The live counts come from a [Refresher] that owns one goroutine: every interval it
// makes one GetQueueAttributes call per queue and per dead-letter queue, and one
// ListMessageMoveTasks per dead-letter queue, whatever the number of open pages; pages
// read its last snapshot. Looking at dead letters receives them (SQS has no read-only
// peek), so it is a POST action too, bounded by [Config.PeekMax].
//
// # Outbox reads
//
// The outbox view reads its store when it is opened and after each action, not on the
// refresher's interval: on DynamoDB its summary counts the index's partitions and its
// parked groups query each group's partition (see the outbox package), which is too
// much to repeat for every open page. It lists at most [OutboxListMax] failed entries
// and parked groups.
package ui
