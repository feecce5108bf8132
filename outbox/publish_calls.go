package outbox

import (
	"fmt"
	"sync"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

// call is one planned SendMessageBatch: entries (indexes into the cycle's entries) of
// one queue, at most one of each FIFO message group, in publish order.
type call struct {
	queue   string
	indexes []int
	groups  map[string]bool
	// after are the earlier calls that carry an earlier entry of one of its groups or one
	// of its unique keys: the call starts only once they are done, so a group never has
	// two calls in flight and goes out in order.
	after []*call
	done  chan struct{} // closed when the call is done (sent, or nothing left to send)
}

// planCalls packs the entries of each queue (queues in first-seen order, entries in
// publish order) into calls of up to 10, a FIFO group at most once per call, and links
// each call to the earlier calls it must wait for. An entry whose outcome is preset is
// planned into no call, and holds back its group's later entries (their outcome is set
// to Held here).
func planCalls(entries []Entry, outcomes []Outcome) []*call {
	var queues []string
	byQueue := map[string][]int{}
	for i, e := range entries {
		if _, ok := byQueue[e.QueueURL]; !ok {
			queues = append(queues, e.QueueURL)
		}
		byQueue[e.QueueURL] = append(byQueue[e.QueueURL], i)
	}
	var calls []*call
	for _, queue := range queues {
		blocked := map[string]error{} // FIFO group → why its earlier entry is not sent
		last := map[string]*call{}    // "g:" group or "u:" unique key → its latest call
		var cur *call
		closeCall := func() {
			if cur != nil && len(cur.indexes) > 0 {
				calls = append(calls, cur)
			}
			cur = nil
		}
		for _, i := range byQueue[queue] {
			e := entries[i]
			if e.Ordered() {
				if why, ok := blocked[e.GroupID]; ok {
					outcomes[i] = Outcome{Held: heldBy(e.GroupID, why)}
					continue
				}
			}
			if preset := outcomes[i]; !preset.Published() {
				if e.Ordered() {
					blocked[e.GroupID] = preset.notSent()
				}
				continue
			}
			if cur != nil && e.Ordered() && cur.groups[e.GroupID] {
				closeCall()
			}
			if cur == nil {
				cur = &call{queue: queue, groups: map[string]bool{}, done: make(chan struct{})}
			}
			var keys []string
			if e.Ordered() {
				cur.groups[e.GroupID] = true
				keys = append(keys, "g:"+e.GroupID)
			}
			if e.Job.UniqueKey != "" {
				keys = append(keys, "u:"+e.Job.UniqueKey)
			}
			for _, k := range keys {
				if prev := last[k]; prev != nil && prev != cur && !containsCall(cur.after, prev) {
					cur.after = append(cur.after, prev)
				}
				last[k] = cur
			}
			cur.indexes = append(cur.indexes, i)
			if len(cur.indexes) == sqsinfo.MaxBatchEntries {
				closeCall()
			}
		}
		closeCall()
	}
	return calls
}

func containsCall(calls []*call, c *call) bool {
	for _, x := range calls {
		if x == c {
			return true
		}
	}
	return false
}

func heldBy(group string, why error) error {
	return fmt.Errorf("outbox: an earlier entry of message group %q was not sent: %w", group, why)
}

// callState is what the calls of one Publish learn as they finish, per queue: the FIFO
// groups whose entry was not sent and, once a call of which every entry failed on SQS's,
// the network's or the queue's side (a queue that does not exist, denied access) is
// done, why the queue takes no more sends in this Publish.
type callState struct {
	mu      sync.Mutex
	blocked map[string]map[string]error // queue → group → why
	down    map[string]error            // queue → why
}

// runCalls sends the planned calls, up to inFlight at once, each after the calls it
// waits for. Just before a call starts, its entries of a group that an earlier entry
// blocked are held, and, on a queue that is down, its entries fail with the queue's
// error (an attempt each) without a send; the rest go in one SendMessageBatch. It
// returns when every call is done.
func runCalls(send func(queue string, call []int), entries []Entry, outcomes []Outcome, calls []*call, inFlight int) {
	state := &callState{blocked: map[string]map[string]error{}, down: map[string]error{}}
	slots := make(chan struct{}, max(inFlight, 1))
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, c := range calls {
		for _, earlier := range c.after {
			<-earlier.done // started before c, so it ends: no wait on a later call
		}
		slots <- struct{}{}
		ready := state.filter(c, entries, outcomes)
		if len(ready) == 0 {
			<-slots
			close(c.done)
			continue
		}
		wg.Add(1)
		go func() { // owned by runCalls, which waits for it
			defer wg.Done()
			defer close(c.done)
			defer func() { <-slots }()
			send(c.queue, ready)
			state.record(c.queue, ready, entries, outcomes)
		}()
	}
}

// filter returns the entries of c to send now and sets the outcomes of the others.
func (s *callState) filter(c *call, entries []Entry, outcomes []Outcome) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	blocked := s.blocked[c.queue]
	down := s.down[c.queue]
	var ready []int
	for _, i := range c.indexes {
		e := entries[i]
		if e.Ordered() && blocked[e.GroupID] != nil {
			outcomes[i] = Outcome{Held: heldBy(e.GroupID, blocked[e.GroupID])}
			continue
		}
		if down != nil {
			outcomes[i] = Outcome{Retry: fmt.Errorf("outbox: not sent: an earlier call to %s failed in this cycle: %w", c.queue, down)}
			s.block(c.queue, e, outcomes[i].Retry)
			continue
		}
		ready = append(ready, i)
	}
	return ready
}

// record notes what the finished call of the entries at sent tells the later calls.
func (s *callState) record(queue string, sent []int, entries []Entry, outcomes []Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	allRetry := true
	for _, i := range sent {
		if !outcomes[i].Published() {
			s.block(queue, entries[i], outcomes[i].notSent())
		}
		allRetry = allRetry && outcomes[i].Retry != nil
	}
	if allRetry && s.down[queue] == nil {
		s.down[queue] = outcomes[sent[0]].Retry
	}
}

// block holds back the later entries of e's group, when e is ordered; s.mu is held.
func (s *callState) block(queue string, e Entry, why error) {
	if !e.Ordered() {
		return
	}
	if s.blocked[queue] == nil {
		s.blocked[queue] = map[string]error{}
	}
	s.blocked[queue][e.GroupID] = why
}
