package main

import (
	"testing"

	"github.com/sqsworker/sqsworker/examples/webhook/delivery"
)

func TestMakePlan(t *testing.T) {
	o := defaultOptions()
	p, err := makePlan(o, "http://127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.messages) != o.Messages || len(p.kinds) != o.Messages-o.Duplicates {
		t.Fatalf("%d messages, %d unique; want %d and %d", len(p.messages), len(p.kinds), o.Messages, o.Messages-o.Duplicates)
	}
	sends := map[string]int{}
	bodies := map[string]string{}
	adjacent := 0
	for i, m := range p.messages {
		sends[m.key]++
		if previous, ok := bodies[m.key]; ok && previous != m.body {
			t.Errorf("duplicate of %s has a different body", m.key)
		}
		bodies[m.key] = m.body
		if i > 0 && p.messages[i-1].key == m.key {
			adjacent++
		}
		_, err := delivery.Parse(m.body)
		if valid := err == nil; valid != (m.kind != kindMalformed) {
			t.Errorf("%s (%q): delivery.Parse error %v, but its kind is %d", m.key, m.body, err, m.kind)
		}
	}
	perKind := map[kind]int{}
	duplicated := 0
	for key, count := range sends {
		perKind[p.kinds[key]]++
		if count > 2 || (count == 2 && p.kinds[key] != kindGood) {
			t.Errorf("%s sent %d times", key, count)
		}
		if count == 2 {
			duplicated++
		}
	}
	if duplicated != o.Duplicates || adjacent < o.Duplicates/2 {
		t.Errorf("%d deliveries sent twice, %d of them back to back; want %d, at least %d", duplicated, adjacent, o.Duplicates, o.Duplicates/2)
	}
	if perKind[kindGone] != o.Gone || perKind[kindMalformed] != o.Malformed || len(p.malformed) != o.Malformed {
		t.Errorf("per kind %v, %d distinct malformed bodies", perKind, len(p.malformed))
	}
	if _, err := makePlan(options{Messages: 10, Duplicates: 8, Malformed: 2}, ""); err == nil {
		t.Error("makePlan accepted more duplicates than good deliveries")
	}
}
