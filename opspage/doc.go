// Package opspage is the operations page of sqsworker, an [http.Handler] a service
// mounts in its own server (the CLI's `sqsworker ui` serves it alone): it shows every
// configured queue (depth, in flight, delayed, dead-letter queue depth, throughput and
// failure rate, refreshed live, and charts of the last hour), browses dead-letter
// queues grouped by failure reason, redrives them (a filtered client-side move with a
// dry run first, or SQS's native message move task), looks up and releases
// idempotency records, and shows a transactional outbox ([Config.Outbox]): its backlog,
// its failed entries with their reasons and attempts, the FIFO message groups they park,
// and Retry and Skip (confirmed first) of a failed entry. It is a front end only: the
// work is done by the redrive, idempotency and outbox packages, exactly as the CLI's
// `redrive`, `dlq`, `idempotency` and `outbox` commands do it.
//
// # Mounting
//
// [New] builds a [Page] from a [Config]; Start begins its polling and Close ends it.
// Under a path prefix (Config.Prefix, such as "/ops") every link, form, asset, script
// fetch and redirect of the page starts with the prefix, and the page takes its
// requests with the prefix or without it:
//
//	mux.Handle("/ops/", page)                           // the prefix kept on the path
//	mux.Handle("/ops/", http.StripPrefix("/ops", page)) // or removed
//
// What the page reads and changes is its Config's: the queues (a request names one of
// them, any other name answers 404), the idempotency store and the outbox. The outbox
// is a small interface ([Outbox]) that the page declares, so any store that lists,
// retries and skips failed entries can back it; the CLI adapts its DynamoDB and
// PostgreSQL stores to it. Throughput comes from [Counters] when set (the CLI reads the
// workers' Prometheus counters), from the change of the SQS counts otherwise.
//
// # How it is built
//
// Pages are rendered on the server with html/template (contextual escaping of every
// message body, attribute and error text) from templates embedded in the binary with
// embed.FS, plus one small hand-written script (static/refresh.js) that polls the JSON
// snapshot for the live counts and the server's charts. There is no front-end framework
// and no build step: there is nothing to build, nothing to keep up to date and nothing
// to audit beyond these files, nothing is fetched from elsewhere at run time (the page
// works offline), and the CLI stays one self-contained binary.
//
// # Charts
//
// A queue's page charts its depth (visible + in flight + delayed), the age of its
// oldest message and its throughput over the last Config.History (an hour by default).
// They come from the page's own polls: the refresher keeps each queue's polls in a
// bounded in-memory ring (at most [HistoryPoints] per queue, a poll every
// History/(HistoryPoints-1) at the least apart), so the charts begin empty when the page
// starts and cost no AWS call of their own. SQS has no attribute for the oldest
// message's age: with [Config.Ages] (the CLI's --cloudwatch: CloudWatch's
// ApproximateAgeOfOldestMessage) the chart shows its answers, asked once per
// [AgeInterval] per queue; without it, an upper bound, the time since a poll last saw
// the queue empty (nothing until one has). Throughput is the
// change of the Counters between kept polls, or the net fall of the depth (a lower
// bound). The charts are drawn on the server as inline SVG (presentation attributes and
// the page's stylesheet only, which its Content-Security-Policy allows), and the script
// replaces them every interval with the server's newer ones.
//
// # Security
//
// The page moves and deletes messages and idempotency records with the operator's AWS
// credentials, so it is meant for one audience: the operator's browser. Every request
// passes the page's guard:
//
//   - the Host header must name the address the page listens on (127.0.0.1, localhost
//     or [::1] with its port, or the configured host), which defeats DNS rebinding: a
//     hostile site that points its own name at 127.0.0.1 sends its name as Host;
//   - every request, on loopback too, must carry the access token ([Config.AccessToken];
//     random by default, [Page.AccessToken]), or any local user or process could act
//     with the operator's credentials. It is presented once, in a GET as ?token=...,
//     which sets an HttpOnly, SameSite=Strict session cookie (a random value per
//     process, not the token; Secure over TLS; its path is the prefix) and redirects to
//     the same page without the token; scripts send Authorization: Bearer TOKEN. Without it every route,
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
// The CLI serves the page on a loopback address unless told otherwise (--public), and
// then only over TLS, so that neither the token nor the cookie crosses a network in
// clear text; a service that mounts the page should do the same (Config.Secure).
//
// # SQS calls
//
// The live counts and the charts come from the page's refresher, which owns one
// goroutine (Start to Close): every interval it makes one GetQueueAttributes call per
// queue and per dead-letter queue, and one ListMessageMoveTasks per dead-letter queue,
// whatever the number of open pages; pages read its last snapshot and its history. Looking at dead letters receives them (SQS has no read-only
// peek), so it is a POST action too, bounded by [Config.PeekMax].
//
// # Outbox reads
//
// The outbox view reads its store when it is opened and after each action, not on the
// refresher's interval: on DynamoDB its summary counts the index's partitions and its
// parked groups query each group's partition (see the outbox package), which is too
// much to repeat for every open page. It lists at most [OutboxListMax] failed entries
// and parked groups.
package opspage
