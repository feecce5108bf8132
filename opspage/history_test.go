package opspage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// fakeClock is the refresher's clock in these tests: Advance moves it.
type fakeClock struct{ at time.Time }

func (c *fakeClock) Now() time.Time          { return c.at }
func (c *fakeClock) Advance(d time.Duration) { c.at = c.at.Add(d) }
func newFakeClock() *fakeClock               { return &fakeClock{at: time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)} }

// pollEvery polls r n times, the clock advancing by interval before each poll after the
// first.
func pollEvery(r *refresher, clock *fakeClock, interval time.Duration, n int) {
	for i := range n {
		if i > 0 {
			clock.Advance(interval)
		}
		r.poll(context.Background())
	}
}

func newClockedRefresher(t *testing.T, api *countingAPI, interval, window time.Duration) (*refresher, *fakeClock) {
	t.Helper()
	r, err := newRefresher(api, []string{plainURL}, nil, interval, window)
	if err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	r.now = clock.Now
	return r, clock
}

// At the default interval and history every poll is kept, up to HistoryPoints: after
// 800 polls 5 s apart, the last 720, 5 s apart, the newest last.
func TestHistoryKeepsAtMostHistoryPoints(t *testing.T) {
	t.Parallel()
	r, clock := newClockedRefresher(t, newCountingAPI(), DefaultInterval, DefaultHistory)
	start := clock.Now()
	pollEvery(r, clock, DefaultInterval, 800)
	kept := r.historyOf(plainURL)
	if len(kept) != HistoryPoints {
		t.Fatalf("kept %d polls, want %d", len(kept), HistoryPoints)
	}
	if newest := kept[len(kept)-1].at; !newest.Equal(clock.Now()) {
		t.Fatalf("newest kept at %s, want the last poll %s", newest, clock.Now())
	}
	for i := 1; i < len(kept); i++ {
		if gap := kept[i].at.Sub(kept[i-1].at); gap != DefaultInterval {
			t.Fatalf("polls %d and %d kept %s apart, want %s", i-1, i, gap, DefaultInterval)
		}
	}
	if oldest := kept[0].at; oldest.Sub(start) != 80*DefaultInterval {
		t.Fatalf("oldest kept %ds after the start, want the 81st poll (400 s)", int(oldest.Sub(start)/time.Second))
	}
	if got := cap(r.histories[plainURL].ring); got != HistoryPoints {
		t.Fatalf("ring capacity %d, want %d", got, HistoryPoints)
	}
}

// Polls faster than History/(HistoryPoints-1) are thinned to one per step: at 500 ms
// over an hour, one poll in ten (5 s apart); a short history at a slow interval keeps
// only its window.
func TestHistorySampling(t *testing.T) {
	t.Parallel()
	fast, clock := newClockedRefresher(t, newCountingAPI(), MinInterval, time.Hour)
	start := clock.Now()
	pollEvery(fast, clock, MinInterval, 1201) // 10 minutes
	kept := fast.historyOf(plainURL)
	if len(kept) != 121 {
		t.Fatalf("kept %d of 1201 polls 500 ms apart, want 121 (one every 5 s)", len(kept))
	}
	for i, s := range kept {
		if want := start.Add(time.Duration(i) * 5 * time.Second); !s.at.Equal(want) {
			t.Fatalf("kept poll %d at +%ds, want +%ds", i, int(s.at.Sub(start)/time.Second), i*5)
		}
	}
	slow, clock := newClockedRefresher(t, newCountingAPI(), 10*time.Second, time.Minute)
	pollEvery(slow, clock, 10*time.Second, 20)
	kept = slow.historyOf(plainURL)
	if len(kept) != 7 || !kept[0].at.Equal(clock.Now().Add(-time.Minute)) || cap(slow.histories[plainURL].ring) != 8 {
		t.Fatalf("a minute at 10 s kept %d polls from %s (ring of %d), want 7 from a minute before the newest (ring of 8)",
			len(kept), kept[0].at, cap(slow.histories[plainURL].ring))
	}
	if _, err := newRefresher(newCountingAPI(), []string{plainURL}, nil, MinInterval, MaxHistory+time.Second); err == nil {
		t.Fatal("a history above MaxHistory was accepted")
	}
}

// The oldest message's age bound is the time since a poll last saw the queue empty,
// unknown until one has.
func TestHistoryOldestAgeBound(t *testing.T) {
	t.Parallel()
	api := newCountingAPI()
	r, clock := newClockedRefresher(t, api, DefaultInterval, DefaultHistory)
	pollEvery(r, clock, DefaultInterval, 2)
	setDepth := func(visible string) {
		api.mu.Lock()
		api.attributes[plainURL]["ApproximateNumberOfMessages"] = visible
		api.mu.Unlock()
	}
	setDepth("0")
	clock.Advance(DefaultInterval)
	r.poll(context.Background())
	setDepth("4")
	clock.Advance(DefaultInterval)
	pollEvery(r, clock, DefaultInterval, 4)
	var got []string
	for _, s := range r.historyOf(plainURL) {
		if !s.emptySeen {
			got = append(got, "unknown")
		} else {
			got = append(got, s.emptyFor.String())
		}
	}
	if want := "unknown unknown 0s 5s 10s 15s 20s"; strings.Join(got, " ") != want {
		t.Fatalf("age bounds %v, want %s", got, want)
	}
}

// fakeAges answers OldestAge from a table and counts its calls.
type fakeAges struct {
	calls int
	age   time.Duration
	err   error
}

func (f *fakeAges) OldestAge(_ context.Context, name string) (time.Duration, bool, error) {
	f.calls++
	return f.age, f.err == nil && f.age > 0, f.err
}

// With Config.Ages the age chart is its answers, asked at most once per AgeInterval per
// queue and kept in between; an error is the queue's AgeError and no value.
func TestHistoryAgesFromSource(t *testing.T) {
	t.Parallel()
	ages := &fakeAges{age: 90 * time.Second}
	r, clock := newClockedRefresher(t, newCountingAPI(), DefaultInterval, DefaultHistory)
	r.ages = ages
	pollEvery(r, clock, DefaultInterval, 13) // one minute: asked at 0 s and 60 s
	if ages.calls != 2 {
		t.Fatalf("Ages asked %d times in 13 polls over 60 s, want 2", ages.calls)
	}
	ages.age, ages.err = 0, errors.New("AccessDenied")
	pollEvery(r, clock, DefaultInterval, 13)
	kept := r.historyOf(plainURL)
	var got []string
	for _, s := range queueSeries(kept, false, true)[1].Points {
		if s.Known {
			got = append(got, fmt.Sprint(s.Value))
		} else {
			got = append(got, "-")
		}
	}
	// Polls kept at 0 s to 60 s, then (the second batch begins at 60 s again) 65 s to
	// 120 s: the read at 60 s holds until the one at 120 s fails.
	want := strings.Repeat("90 ", 24) + "-"
	if strings.Join(got, " ") != want {
		t.Fatalf("age points %v, want %s", got, want)
	}
	if snapshot := r.snapshotNow(); snapshot.Queues[0].AgeError != "AccessDenied" || ages.calls != 3 {
		t.Fatalf("AgeError %q after %d calls, want AccessDenied after 3", snapshot.Queues[0].AgeError, ages.calls)
	}
}
