package ui_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/chromedp/chromedp"

	"github.com/sqsworker/sqsworker"
	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/opspage"
	"github.com/sqsworker/sqsworker/redrive"
)

// screenshotsVariable names a directory (make ui-screenshots: docs/) where the browser
// test saves the pages it visits as PNG files; unset, nothing is written.
const screenshotsVariable = "SQSWORKER_UI_SCREENSHOTS"

// chromiumPath returns Debian's Chromium (or SQSWORKER_CHROMIUM) and fails the test,
// never skips it, when it is missing.
func chromiumPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("SQSWORKER_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if info, err := os.Stat(path); err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
		t.Fatalf("Chromium is not installed at %s, and the operations page is tested in a real browser: run localstack/chromium-up "+
			"(make up and make test run it; it installs Debian's chromium package with apt-get), or set SQSWORKER_CHROMIUM", path)
	}
	return path
}

// browser starts a headless Chromium with a fresh profile; without the background
// networking flags it tries to reach Google's services, which this closed network refuses.
func browser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	options := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1000),
	}
	ctx, cancelTimeout := context.WithTimeout(context.Background(), timeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, options...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc(); cancelTimeout() })
	return tabCtx
}

// serve starts the page on 127.0.0.1 (a port of its own) as a service mounts it: at the
// root of the server without config.Prefix, otherwise in the service's own mux (which
// has a route of its own at /) under the prefix, as it is or behind http.StripPrefix
// (strip). It returns the page and its base URL, the prefix included.
func serve(t *testing.T, client *sqs.Client, config opspage.Config, strip bool) (*opspage.Page, string) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	config.Addr = listener.Addr().String()
	page, err := opspage.New(client, config)
	if err != nil {
		t.Fatal(err)
	}
	page.Start(context.Background())
	var handler http.Handler = page
	if config.Prefix != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "the service's own page") })
		if strip {
			mux.Handle(config.Prefix+"/", http.StripPrefix(config.Prefix, page))
		} else {
			mux.Handle(config.Prefix+"/", page)
		}
		handler = mux
	}
	httpServer := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = httpServer.Serve(listener) }()
	t.Cleanup(func() {
		_ = httpServer.Close()
		page.Close()
	})
	return page, "http://" + config.Addr + config.Prefix
}

// seeded is what seedDeadLetters put in the dead-letter queue, by failure reason.
type seeded struct {
	bodies map[string][]string // reason ("-" for the redrive policy) -> bodies
}

// seedDeadLetters fills the queue's dead-letter queue as the demo's failures end there:
// three HTTP410 and two MalformedBody messages sent by the worker's own dead-letter send
// (testenv.DeadLetter, with their failure attributes), and two messages the
// redrive policy moved after maxReceiveCount (1) receives.
func seedDeadLetters(t *testing.T, client *sqs.Client, queue testenv.Queue) seeded {
	t.Helper()
	ctx := context.Background()
	s := seeded{bodies: map[string][]string{}}
	for i, reason := range []string{"HTTP410", "HTTP410", "HTTP410", "MalformedBody", "MalformedBody"} {
		body := fmt.Sprintf(`{"webhook":"w-%d","reason":%q}`, i, reason)
		message := &sqsworker.Message{ID: fmt.Sprintf("m-%d", i), Body: body, ReceiveCount: 1, QueueURL: queue.URL,
			MessageAttributes: map[string]sqsworker.MessageAttribute{sqsworker.AttributeJobType: {DataType: "String", StringValue: "webhook"}}}
		outcome := sqsworker.Outcome{Kind: sqsworker.OutcomeDeadLetter, Reason: reason, Err: fmt.Errorf("webhook answered %s", reason)}
		testenv.DeadLetter(t, client, queue.URL, message, outcome)
		s.bodies[reason] = append(s.bodies[reason], body)
	}
	for i := range 2 {
		body := fmt.Sprintf(`{"webhook":"slow-%d"}`, i)
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue.URL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
		s.bodies[opspage.NoReason] = append(s.bodies[opspage.NoReason], body)
	}
	// Fail every receive (release at once) until the redrive policy moved both.
	testenv.Eventually(t, testenv.WaitTimeout, "the redrive policy moved 2 messages", func() bool {
		output, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue.URL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, message := range output.Messages {
			if _, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queue.URL), ReceiptHandle: message.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		visible, _ := testenv.Counts(t, client, queue.DeadLetterQueueURL)
		return visible == 7
	})
	return s
}

// receiveAll receives exactly want messages from url (kept in flight for a minute) and
// returns them by message id; an extra message fails the test.
func receiveAll(t *testing.T, client *sqs.Client, url string, want int) map[string]types.Message {
	t.Helper()
	messages := testenv.Receive(t, client, sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: 60}, want, testenv.ReceiveTimeout)
	if len(messages) != want {
		t.Fatalf("received %d messages from %s, want exactly %d", len(messages), url, want)
	}
	byID := map[string]types.Message{}
	for _, message := range messages {
		byID[aws.ToString(message.MessageId)] = message
	}
	return byID
}

func release(t *testing.T, client *sqs.Client, url string, messages map[string]types.Message) {
	t.Helper()
	for _, message := range messages {
		if _, err := client.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: message.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv(screenshotsVariable)
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func run[T any](t *testing.T, ctx context.Context, action chromedp.Action[T]) T {
	t.Helper()
	value, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatal(err)
	}
	return value
}

func do(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// submit clicks a form's button and waits for the page it loads, which must answer 200.
func submit(t *testing.T, ctx context.Context, button string) {
	t.Helper()
	response, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID(button)))
	if err != nil {
		t.Fatal(err)
	}
	if response.Status != http.StatusOK {
		body := run(t, ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("clicking #%s: %d %s", button, response.Status, body)
	}
}

// poll waits until the JavaScript predicate holds on the current page.
func poll(t *testing.T, ctx context.Context, what, predicate string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingTimeout(testenv.WaitTimeout), chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestBrowser drives the operations page in headless Chromium against the emulator: live
// counts, dead letters by reason, message detail and body, a filtered redrive after its
// dry run, refused unsafe requests, the native move task, an idempotency release, and
// the outbox view (browseOutbox).
func TestBrowser(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	dynamo := testenv.DynamoDB(t)
	ctx := browser(t, 5*time.Minute)
	queue := testenv.NewQueue(t, client, testenv.QueueOptions{MaxReceiveCount: 1})
	table := testenv.NewTable(t, dynamo)
	store := idempotency.NewDynamoDBStore(dynamo, table)
	box := newFailedOutbox(t, client, "dynamodb")
	// Mounted under a prefix in a service's mux, behind http.StripPrefix: every link,
	// form, asset and fetch below goes through the prefix.
	server, base := serve(t, client, opspage.Config{Prefix: "/ops", Queues: []string{queue.URL}, Interval: opspage.MinInterval,
		Store: store, Table: table, Outbox: box.store}, true)
	name := queueName(queue.URL)
	row := fmt.Sprintf(`document.querySelector('tr[data-queue=%q] [data-field=%%q]')`, name)
	field := func(f string) string { return fmt.Sprintf(row, f) + ".textContent" }

	// Without its access token the page refuses the browser; the address with the token
	// (as `sqsworker ui` prints it) sets the session cookie and leaves it out of the URL.
	if response := run(t, ctx, chromedp.NavigateResponse(base+"/")); response.Status != http.StatusUnauthorized {
		t.Fatalf("GET / without the access token answered %d, want 401", response.Status)
	}
	// The page loads before the dead letters exist; the live refresh shows them arrive.
	response := run(t, ctx, chromedp.NavigateResponse(base+"/?"+opspage.AccessTokenParam+"="+server.AccessToken()))
	if response.Status != http.StatusOK {
		t.Fatalf("GET /?token= answered %d", response.Status)
	}
	if location := run(t, ctx, chromedp.Evaluate[string](`location.href`)); location != base+"/" {
		t.Fatalf("after the token the page is at %s, want %s/ (the token dropped from the address)", location, base)
	}
	if cookie := run(t, ctx, chromedp.Evaluate[string](`document.cookie`)); cookie != "" {
		t.Fatalf("the page's script can read cookies %q; the session cookie must be HttpOnly", cookie)
	}
	seed := seedDeadLetters(t, client, queue)
	// One poll reads the queue, then its DLQ: a snapshot taken while the redrive policy
	// moved a message can show it in neither or both, so wait for both counts.
	poll(t, ctx, "the live counts: DLQ depth 7, none visible", field("dlq_depth")+` === "7" && `+field("visible")+` === "0"`)
	screenshot(t, ctx, "ui-queues.png")

	// The dead-letter browser: counts by reason.
	do(t, ctx, chromedp.Navigate(base+"/dlq?queue="+name))
	submit(t, ctx, "peek")
	groups := run(t, ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries([...document.querySelectorAll('#groups tr[data-reason]')].map(r => [r.dataset.reason, r.querySelector('.count').textContent]))`))
	if want := map[string]string{"HTTP410": "3", "MalformedBody": "2", opspage.NoReason: "2"}; fmt.Sprint(groups) != fmt.Sprint(want) {
		t.Fatalf("dead letters by reason = %v, want %v", groups, want)
	}
	type messageRow struct{ ID, Reason string }
	rows := run(t, ctx, chromedp.Evaluate[[]messageRow](`[...document.querySelectorAll('#messages tr[data-id]')].map(r => ({ID: r.dataset.id, Reason: r.children[1].textContent}))`))
	if len(rows) != 7 {
		t.Fatalf("message rows = %v, want 7", rows)
	}
	screenshot(t, ctx, "ui-dlq.png")

	// A message's detail, its body only on request.
	var gone string
	keep := map[string]bool{} // the DLQ ids that must stay: every reason but HTTP410
	for _, r := range rows {
		if r.Reason != "HTTP410" {
			keep[r.ID] = true
		} else {
			gone = r.ID
		}
	}
	do(t, ctx, chromedp.Navigate(base+"/dlq/message?queue="+name+"&id="+gone))
	if reason := run(t, ctx, chromedp.Text(chromedp.ID("reason"))); reason != "HTTP410" {
		t.Fatalf("detail reason = %q", reason)
	}
	if has := run(t, ctx, chromedp.Evaluate[bool](`document.getElementById("body") !== null`)); has {
		t.Fatal("the body is shown before it was asked for")
	}
	submit(t, ctx, "show-body")
	if body := run(t, ctx, chromedp.Text(chromedp.ID("body"))); !slices.Contains(seed.bodies["HTTP410"], body) {
		t.Fatalf("body %q is not one of the HTTP410 bodies %v", body, seed.bodies["HTTP410"])
	}

	// Filtered redrive: the dry run's numbers, then exactly the matching messages move.
	do(t, ctx, chromedp.Navigate(base+"/dlq?queue="+name), chromedp.SetValue(chromedp.ID("reason"), "HTTP410"))
	submit(t, ctx, "dry-run")
	numbers := run(t, ctx, chromedp.Evaluate[[]string](`["would-move", "received", "skipped"].map(id => document.getElementById(id).textContent)`))
	if fmt.Sprint(numbers) != "[3 7 4]" {
		t.Fatalf("dry run would move, received, skipped = %v, want [3 7 4]", numbers)
	}
	testenv.Eventually(t, testenv.WaitTimeout, "the dry run released every message", func() bool {
		visible, inFlight := testenv.Counts(t, client, queue.DeadLetterQueueURL)
		return visible == 7 && inFlight == 0
	})
	screenshot(t, ctx, "ui-dry-run.png")
	submit(t, ctx, "confirm")
	if moved := run(t, ctx, chromedp.Text(chromedp.ID("moved"))); moved != "3" {
		t.Fatalf("moved = %q, want 3", moved)
	}
	left := receiveAll(t, client, queue.DeadLetterQueueURL, 4)
	if ids := slices.Sorted(maps.Keys(left)); fmt.Sprint(ids) != fmt.Sprint(slices.Sorted(maps.Keys(keep))) {
		t.Fatalf("the dead-letter queue holds %v, want exactly %v", ids, slices.Sorted(maps.Keys(keep)))
	}
	arrived := receiveAll(t, client, queue.URL, 3)
	var bodies []string
	for _, message := range arrived {
		bodies = append(bodies, aws.ToString(message.Body))
	}
	if slices.Sort(bodies); fmt.Sprint(bodies) != fmt.Sprint(slices.Sorted(slices.Values(seed.bodies["HTTP410"]))) {
		t.Fatalf("the queue received %v, want exactly the HTTP410 bodies %v", bodies, seed.bodies["HTTP410"])
	}
	release(t, client, queue.DeadLetterQueueURL, left)
	for _, message := range arrived { // so that the move task's messages are the queue's only ones
		if _, err := client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(queue.URL), ReceiptHandle: message.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}

	// An unsafe action cannot be triggered by a GET, nor by a POST without the token.
	do(t, ctx, chromedp.Navigate(base+"/dlq?queue="+name), chromedp.SetValue(chromedp.ID("reason"), "MalformedBody"))
	submit(t, ctx, "dry-run")
	plan := run(t, ctx, chromedp.Value(chromedp.CSS(`input[name=plan]`)))
	csrf := run(t, ctx, chromedp.Value(chromedp.CSS(`input[name=csrf]`)))
	for _, path := range []string{"/redrive/move?plan=" + plan + "&csrf=" + csrf, "/movetask/start?queue=" + name + "&csrf=" + csrf, "/dlq/peek?queue=" + name + "&csrf=" + csrf} {
		response := run(t, ctx, chromedp.NavigateResponse(base+path))
		if response.Status != http.StatusMethodNotAllowed {
			t.Fatalf("GET %s answered %d, want 405", path, response.Status)
		}
	}
	// The page's own script context, same origin: a POST without the form token is refused.
	noToken := fmt.Sprintf(`fetch(%q, {method: "POST", body: new URLSearchParams({plan: %q})}).then(r => r.status)`, base+"/redrive/move", plan)
	if status := run(t, ctx, chromedp.Evaluate[int](noToken, chromedp.EvalAwaitPromise)); status != http.StatusForbidden {
		t.Fatalf("POST /redrive/move without the form token answered %d, want 403", status)
	}
	noTask := fmt.Sprintf(`fetch(%q, {method: "POST", body: new URLSearchParams({queue: %q, csrf: "wrong"})}).then(r => r.status)`, base+"/movetask/start", name)
	if status := run(t, ctx, chromedp.Evaluate[int](noTask, chromedp.EvalAwaitPromise)); status != http.StatusForbidden {
		t.Fatalf("POST /movetask/start with a wrong form token answered %d, want 403", status)
	}
	// A page of another origin (another port of 127.0.0.1: the same site, so the
	// SameSite=Strict cookie goes along) that posts the confirmation, even with the
	// right form token, is refused.
	evil := crossOriginForm(t, base+"/redrive/move", map[string]string{"plan": plan, "csrf": csrf})
	do(t, ctx, chromedp.Navigate(evil))
	if response, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("attack"))); err != nil || response.Status != http.StatusForbidden {
		t.Fatalf("a cross-origin form POST with the session cookie answered %v, %v; want 403", response, err)
	}
	if body := run(t, ctx, chromedp.Text(chromedp.CSS("body"))); !strings.Contains(body, "cross-origin request refused") {
		t.Fatalf("the cross-origin POST was answered %q", body)
	}
	// Nothing moved and no task started: the four dead letters are all still there.
	still := receiveAll(t, client, queue.DeadLetterQueueURL, 4)
	if ids := slices.Sorted(maps.Keys(still)); fmt.Sprint(ids) != fmt.Sprint(slices.Sorted(maps.Keys(keep))) {
		t.Fatalf("after the refused requests the dead-letter queue holds %v, want %v", ids, slices.Sorted(maps.Keys(keep)))
	}
	release(t, client, queue.DeadLetterQueueURL, still)
	if tasks, err := redrive.ListMoveTasks(context.Background(), client, queue.DeadLetterQueueURL, 0); err != nil || len(tasks) != 0 {
		t.Fatalf("move tasks after the refused requests: %v, %v; want none", tasks, err)
	}

	// The native move task, to the queue (the worker's own dead letters have no original
	// source queue), with its progress on the page.
	do(t, ctx, chromedp.Navigate(base+"/dlq?queue="+name))
	submit(t, ctx, "start-task")
	poll(t, ctx, "the move task to complete", `document.getElementById("move-task").textContent.startsWith("COMPLETED")`)
	wantTask := "COMPLETED: moved 4 of 4"
	if testenv.SQSEmulator() == testenv.ElasticMQ { // testenv.ElasticMQMoveTaskToMoveCountsDown
		wantTask = "COMPLETED: moved 4 of 0"
	}
	if text := run(t, ctx, chromedp.Text(chromedp.ID("move-task"))); text != wantTask {
		t.Fatalf("move task progress = %q, want %s", text, wantTask)
	}
	poll(t, ctx, "the live DLQ depth 0", `document.getElementById("dlq-depth").textContent === "0"`)
	moved := receiveAll(t, client, queue.URL, 4)
	bodies = bodies[:0]
	for _, message := range moved {
		bodies = append(bodies, aws.ToString(message.Body))
	}
	want := slices.Sorted(slices.Values(append(slices.Clone(seed.bodies["MalformedBody"]), seed.bodies[opspage.NoReason]...)))
	if slices.Sort(bodies); fmt.Sprint(bodies) != fmt.Sprint(want) {
		t.Fatalf("the move task delivered %v, want %v", bodies, want)
	}

	// Idempotency: look a record up, refuse to release a COMPLETED one unconfirmed,
	// release it when confirmed.
	key := "order-" + strconv.Itoa(int(time.Now().UnixNano()%1e6))
	stored, storedErr := idempotency.StoredKey("", key) // the page derives it from the key typed
	if storedErr != nil {
		t.Fatal(storedErr)
	}
	record := idempotency.Record{Key: stored, Status: idempotency.StatusInProgress, Lease: "lease-1",
		InProgressExpiresAt: time.Now().Add(time.Minute), ExpiresAt: time.Now().Add(time.Hour)}
	if err := store.PutInProgress(context.Background(), record, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := store.Complete(context.Background(), record); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(base+"/idempotency"), chromedp.SetValue(chromedp.ID("key"), key))
	submit(t, ctx, "lookup")
	if status := run(t, ctx, chromedp.Text(chromedp.ID("status"))); status != "COMPLETED" {
		t.Fatalf("record status = %q, want COMPLETED", status)
	}
	screenshot(t, ctx, "ui-idempotency.png")
	response, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.ID("release")))
	if err != nil || response.Status != http.StatusConflict {
		t.Fatalf("releasing a COMPLETED record unconfirmed: %v, %v; want 409", response, err)
	}
	if _, err := store.Get(context.Background(), stored); err != nil {
		t.Fatalf("the unconfirmed release deleted the record: %v", err)
	}
	do(t, ctx, chromedp.Click(chromedp.ID("force")))
	submit(t, ctx, "release")
	run(t, ctx, chromedp.Text(chromedp.ID("released")))
	if _, err := store.Get(context.Background(), stored); !errors.Is(err, idempotency.ErrNotFound) {
		t.Fatalf("after the release the record is still there: %v", err)
	}

	browseOutbox(t, ctx, base, box)
}

// crossOriginForm serves, on a port of its own, a page with a form that POSTs fields to
// target, and returns the page's URL.
func crossOriginForm(t *testing.T, target string, fields map[string]string) string {
	t.Helper()
	var inputs strings.Builder
	for name, value := range fields {
		fmt.Fprintf(&inputs, `<input type="hidden" name="%s" value="%s">`, html.EscapeString(name), html.EscapeString(value))
	}
	page := fmt.Sprintf(`<!DOCTYPE html><form method="post" action="%s">%s<button id="attack" type="submit">win a prize</button></form>`,
		html.EscapeString(target), inputs.String())
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(server.Close)
	return server.URL
}

func queueName(url string) string {
	return url[strings.LastIndex(url, "/")+1:]
}
