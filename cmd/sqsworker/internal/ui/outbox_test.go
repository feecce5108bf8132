package ui_test

import (
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/internal/testing/testenv"
	"github.com/sqsworker/sqsworker/opspage"
	"github.com/sqsworker/sqsworker/outbox"
)

// pageClient talks to a served page as a script does: Authorization: Bearer TOKEN, and
// the form token read from the page for its POSTs.
type pageClient struct {
	t     *testing.T
	base  string
	token string
	csrf  string
}

// do sends the request and returns the status and the body, HTML entities decoded.
func (c *pageClient) do(method, path string, form url.Values) (int, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	r.Header.Set("Authorization", "Bearer "+c.token)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	response, err := http.DefaultClient.Do(r)
	if err != nil {
		c.t.Fatal(err)
	}
	defer response.Body.Close()
	text, err := io.ReadAll(response.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	if token := csrfField.FindStringSubmatch(string(text)); token != nil {
		c.csrf = token[1]
	}
	return response.StatusCode, html.UnescapeString(string(text))
}

// post sends an action's form with the form token.
func (c *pageClient) post(path string, fields ...string) (int, string) {
	c.t.Helper()
	form := url.Values{opspage.CSRFField: {c.csrf}}
	for i := 0; i+1 < len(fields); i += 2 {
		form.Set(fields[i], fields[i+1])
	}
	return c.do(http.MethodPost, path, form)
}

var (
	csrfField   = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	failedRow   = regexp.MustCompile(`<tr id="entry-([0-9a-f]{32})" data-id=`)
	parkedRow   = regexp.MustCompile(`<tr data-group="([^"]*)" data-queue="[^"]*" data-entry="([0-9a-f]{32})">\s*<td[^>]*>[^<]*</td><td>[^<]*</td><td class="count">(\d+)</td>`)
	summaryCell = regexp.MustCompile(`<td id="(unpublished|failed-count|parked-count)">(\d+)</td>`)
)

// outboxState is what the outbox view shows.
type outboxState struct {
	summary map[string]string // unpublished, failed-count, parked-count
	failed  []string          // entry ids, in the page's order
	parked  []string          // "group entry waiting"
}

func readOutbox(t *testing.T, c *pageClient) (outboxState, string) {
	t.Helper()
	status, body := c.do(http.MethodGet, "/outbox", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /outbox = %d: %s", status, body)
	}
	return parseOutbox(body), body
}

func parseOutbox(body string) outboxState {
	s := outboxState{summary: map[string]string{}}
	for _, m := range summaryCell.FindAllStringSubmatch(body, -1) {
		s.summary[m[1]] = m[2]
	}
	for _, m := range failedRow.FindAllStringSubmatch(body, -1) {
		s.failed = append(s.failed, m[1])
	}
	for _, m := range parkedRow.FindAllStringSubmatch(body, -1) {
		s.parked = append(s.parked, m[1]+" "+m[2]+" "+m[3])
	}
	return s
}

// failedRowOf returns the failed-entries table row of id.
func failedRowOf(t *testing.T, body, id string) string {
	t.Helper()
	start := strings.Index(body, `<tr id="entry-`+id+`"`)
	if start < 0 {
		t.Fatalf("no failed-entry row for %s", id)
	}
	end := strings.Index(body[start:], "</tr>")
	return body[start : start+end]
}

// The outbox view on both stores, with entries that really failed against queues that
// do not exist: the backlog summary, the failed entries with reason, attempts and
// destination, the parked group with its blocking entry; Skip asks for confirmation and
// then deletes only that entry; once the FIFO queue exists Retry sends the parked group
// in order. Actions refuse a POST without the form token, a malformed id and an entry
// that is not failed.
func TestOutboxView(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"dynamodb", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			client := testenv.SQS(t)
			box := newFailedOutbox(t, client, store)
			queue := testenv.NewQueue(t, client, testenv.QueueOptions{NoDeadLetterQueue: true})
			// Mounted under a prefix in a service's mux, the prefix left on the path.
			server, base := serve(t, client, opspage.Config{Prefix: "/ops", Queues: []string{queue.URL}, Outbox: box.store}, false)
			c := &pageClient{t: t, base: base, token: server.AccessToken()}
			head, waiting, lone := box.group[0].ID, box.group[1].ID, box.lone.ID

			if _, body := c.do(http.MethodGet, "/", nil); !strings.Contains(body, `<a href="/ops/outbox" id="nav-outbox">`) {
				t.Fatalf("the queues page has no link to the outbox view:\n%s", body)
			}
			state, body := readOutbox(t, c)
			if want := map[string]string{"unpublished": "1", "failed-count": "2", "parked-count": "1"}; !maps.Equal(state.summary, want) {
				t.Fatalf("summary = %v, want %v", state.summary, want)
			}
			if want := []string{head, lone}; !slices.Equal(state.failed, want) { // parked heads first
				t.Fatalf("failed entries = %v, want %v", state.failed, want)
			}
			if want := []string{"G " + head + " 1"}; !slices.Equal(state.parked, want) {
				t.Fatalf("parked groups = %v, want %v", state.parked, want)
			}
			if !strings.Contains(body, box.store.Name()) {
				t.Fatalf("the view does not name the outbox %q", box.store.Name())
			}
			for _, entry := range []outbox.Entry{box.group[0], box.lone} {
				row := failedRowOf(t, body, entry.ID)
				for _, want := range []string{`<td class="count attempts">1</td>`, `title="` + entry.QueueURL + `"`,
					"outbox: entry not sent after its last attempt (attempt 1 of 1): ", entry.Type,
					`id="retry-` + entry.ID + `"`, `id="skip-` + entry.ID + `"`} {
					if !strings.Contains(row, want) {
						t.Fatalf("the row of %s lacks %q:\n%s", entry.ID, want, row)
					}
				}
			}

			// Refused: no form token, a malformed id, an entry that is not failed.
			if status, _ := c.do(http.MethodPost, "/outbox/retry", url.Values{"id": {head}}); status != http.StatusForbidden {
				t.Fatalf("POST /outbox/retry without the form token = %d, want 403", status)
			}
			if status, body := c.post("/outbox/skip", "id", "../"+head, "confirm", "yes"); status != http.StatusBadRequest || !strings.Contains(body, "is not an outbox entry id") {
				t.Fatalf("skip of a malformed id = %d: %s", status, body)
			}
			if status, body := c.post("/outbox/retry", "id", waiting); status != http.StatusConflict || !strings.Contains(body, "no failed entry has this id") {
				t.Fatalf("retry of the waiting entry = %d: %s", status, body)
			}

			// Skip: the first POST only asks, the confirmation deletes that entry alone.
			status, body := c.post("/outbox/skip", "id", lone)
			if status != http.StatusOK || !strings.Contains(body, `id="confirm-skip"`) || !strings.Contains(body, `<td id="skip-destination">`+box.lone.QueueURL+`</td>`) {
				t.Fatalf("skip without confirmation = %d:\n%s", status, body)
			}
			if failed := failedIDs(t, box); !slices.Equal(failed, []string{head, lone}) {
				t.Fatalf("after the unconfirmed skip the failed entries are %v, want both still there", failed)
			}
			if status, body := c.post("/outbox/skip", "id", lone, "confirm", "yes"); status != http.StatusOK || !strings.Contains(body, "Skipped entry "+lone) {
				t.Fatalf("confirmed skip = %d: %s", status, body)
			}
			if failed := failedIDs(t, box); !slices.Equal(failed, []string{head}) {
				t.Fatalf("after the skip the failed entries are %v, want only %s", failed, head)
			}
			if status, _ := c.post("/outbox/skip", "id", lone, "confirm", "yes"); status != http.StatusConflict {
				t.Fatalf("a second skip = %d, want 409", status)
			}

			// Retry, once the queue exists: the parked group goes out in order.
			box.createFIFO(t)
			if status, body := c.post("/outbox/retry", "id", head); status != http.StatusOK || !strings.Contains(body, "Retried entry "+head) {
				t.Fatalf("retry = %d: %s", status, body)
			}
			box.receivedInOrder(t)
			testenv.Eventually(t, testenv.WaitTimeout, "an empty outbox", func() bool {
				state, _ := readOutbox(t, c)
				return maps.Equal(state.summary, map[string]string{"unpublished": "0", "failed-count": "0", "parked-count": "0"}) &&
					len(state.failed) == 0 && len(state.parked) == 0
			})
		})
	}
}

func failedIDs(t *testing.T, box *failedOutbox) []string {
	t.Helper()
	entries, err := box.store.Failed(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	return ids
}
