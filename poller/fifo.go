package poller

// FIFO queues: messages of one group are handled in order, one at a time; groups run
// in parallel. When a message is not done with (it failed, was deferred, or was
// released at the drain deadline), the group's later messages already received are
// released (visibility 0) unhandled, so SQS hands the group out again in order,
// starting with the failed message once its visibility runs out.

// group is a FIFO message group's received messages waiting for their turn.
type group struct {
	queued []*delivery
	// settling is set while the current message is being settled: from then on it may
	// be visible again, and SQS may hand it (and the group) out anew. Messages that
	// arrive meanwhile wait in arrived: they continue the group if the current message
	// is done with, and start the group afresh if it is not.
	settling bool
	arrived  []*delivery
}

// enqueueGroup appends delivery to its group (of its queue), in order, and starts a
// goroutine for the group if it has none. d.mu must be held.
func (d *dispatcher) enqueueGroup(delivery *delivery) {
	id := delivery.lane.queueURL + "\x00" + delivery.message.GroupID // groups are per queue
	g, running := d.groups[id]
	if !running {
		g = &group{}
		d.startGroup(id, g)
	}
	if g.settling {
		g.arrived = append(g.arrived, delivery)
	} else {
		g.queued = append(g.queued, delivery)
	}
}

// startGroup registers g and starts its goroutine. d.mu must be held.
func (d *dispatcher) startGroup(id string, g *group) {
	d.groups[id] = g
	d.wg.Go(func() { d.runGroup(id, g) })
}

// runGroup handles g's messages one after another until none is left, releasing the
// rest of the group after a message that is not done with.
func (d *dispatcher) runGroup(id string, g *group) {
	for {
		d.mu.Lock()
		if d.stopping || len(g.queued) == 0 {
			unstarted := g.queued
			g.queued = nil
			delete(d.groups, id)
			d.mu.Unlock()
			d.releaseUnstarted(unstarted, "shutting down")
			return
		}
		next := g.queued[0]
		g.queued = g.queued[1:]
		turn := d.turns.ask(next)
		d.mu.Unlock()
		<-turn.ready
		if !turn.granted {
			continue // stop released next; the loop releases the rest
		}

		done, abandoned := d.process(next, func() {
			d.mu.Lock()
			g.settling = true
			d.mu.Unlock()
		})

		d.mu.Lock()
		g.settling = false
		arrived := g.arrived
		g.arrived = nil
		if done {
			g.queued = append(g.queued, arrived...)
			d.mu.Unlock()
			d.releaseSlot(next.lane, abandoned)
			continue
		}
		rest := g.queued
		g.queued = nil
		delete(d.groups, id)
		if len(arrived) > 0 && !d.stopping {
			d.startGroup(id, &group{queued: arrived})
		} else {
			rest = append(rest, arrived...)
		}
		d.mu.Unlock()
		d.rescheduleWithRest(next, rest)
		d.releaseSlot(next.lane, abandoned) // a handler past its timeout must not hold the rest of the group back
		return
	}
}

// rescheduleWithRest sends the visibility change of a group's message that is not done
// with (its retry delay; none if it was released already) together with the release of
// the group's later messages, in one ChangeMessageVisibilityBatch per ten: the group
// moves again as soon as the failed message's delay is over, and no heartbeat extends
// the released messages.
func (d *dispatcher) rescheduleWithRest(head *delivery, rest []*delivery) {
	changes := rest
	if head.pending != nil {
		changes = append([]*delivery{head}, rest...)
	}
	for _, r := range rest {
		head.lane.tokenSettled(r)
		head.lane.settler.extender.remove(r.lease)
	}
	head.lane.settler.flush(changes, "an earlier message of its FIFO group was not done with")
	d.pool.release(head.lane.slots, len(rest))
}

// takeQueued removes and returns every group's messages that have not started.
// d.mu must be held.
func (d *dispatcher) takeQueued() []*delivery {
	var queued []*delivery
	for _, g := range d.groups {
		queued = append(queued, g.queued...)
		queued = append(queued, g.arrived...)
		g.queued, g.arrived = nil, nil
	}
	return queued
}
