package table_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/table"
)

// TestNamespaceNamesAreSeparable: the construction's premise. Every name is non-empty,
// distinct and free of the separator, so a key's text before its first "#" is its
// namespace.
func TestNamespaceNamesAreSeparable(t *testing.T) {
	t.Parallel()
	seen := map[table.Namespace]bool{}
	for _, ns := range table.Namespaces() {
		if ns == "" || strings.Contains(string(ns), table.Separator) || seen[ns] {
			t.Errorf("namespace %q is empty, contains %q or is listed twice", ns, table.Separator)
		}
		seen[ns] = true
	}
	for _, want := range []table.Namespace{table.Idempotency, table.Unique, table.Scheduler, table.Limits, table.Batches, table.JobRecords, table.Cancellation} {
		if !seen[want] {
			t.Errorf("namespace %q is not listed", want)
		}
	}
}

// TestLayouts pins the stored form of every layout: the unique and scheduler keys keep
// the form their packages wrote before the table package existed.
func TestLayouts(t *testing.T) {
	t.Parallel()
	must := func(key string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return key
	}
	for got, want := range map[string]string{
		must(table.IdempotencyKey("webhook", "d-1")):                 "idempotency#webhook#d-1",
		must(table.IdempotencyKey("", "unique#order-42")):            "idempotency##unique#order-42",
		must(table.UniqueKey("order-42")):                            "unique#order-42",
		must(table.JobRecordKey("01KBQ2ZP5E8Y9V0D2X4M6N8R1T")):       "job#01KBQ2ZP5E8Y9V0D2X4M6N8R1T",
		must(table.SchedulerLeaseKey("default")):                     "scheduler#lease#default",
		must(table.SchedulerScheduleKey("nightly#report")):           "scheduler#schedule#nightly#report",
		must(table.Key(table.Limits, "tenant-1", "api")):             "limit#tenant-1#api",
		must(table.LimitPermitsKey("api", 3, "tenant#1")):            "limit#permits#api#3#tenant#1",
		must(table.LimitRateKey("api", 0, "tenant#1")):               "limit#rate#api#0#tenant#1",
		must(table.BatchKey("01KBQ2ZP5E8Y9V0D2X4M6N8R1T")):           "batch#meta#01KBQ2ZP5E8Y9V0D2X4M6N8R1T",
		must(table.BatchShardKey("01KBQ2ZP5E8Y9V0D2X4M6N8R1T", 3)):   "batch#shard#01KBQ2ZP5E8Y9V0D2X4M6N8R1T#3",
		must(table.BatchJobKey("01KBQ2ZP5E8Y9V0D2X4M6N8R1T", "j#1")): "batch#job#01KBQ2ZP5E8Y9V0D2X4M6N8R1T#j#1",
		must(table.Key(table.Cancellation, "job#1")):                 "cancel#job#1",
		must(table.Key(table.JobRecords, "", "", "01HX")):            "job###01HX",
		must(table.Key(table.Batches, strings.Repeat("b", 8))):       "batch#bbbbbbbb",
	} {
		if got != want {
			t.Errorf("key %q; want %q", got, want)
		}
	}
}

func TestKeyRejectsWhatCannotBeAKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", table.MaxKeyBytes-len("unique#")+1)
	for name, build := range map[string]func() (string, error){
		"unknown namespace":  func() (string, error) { return table.Key("webhook", "d-1") },
		"empty namespace":    func() (string, error) { return table.Key("", "d-1") },
		"no parts":           func() (string, error) { return table.Key(table.Unique) },
		"empty last part":    func() (string, error) { return table.UniqueKey("") },
		"# in a prefix":      func() (string, error) { return table.IdempotencyKey("a#b", "c") },
		"not UTF-8 (last)":   func() (string, error) { return table.UniqueKey("k\xff") },
		"not UTF-8 (prefix)": func() (string, error) { return table.IdempotencyKey("p\xfe", "k") },
		"over 2048 bytes":    func() (string, error) { return table.UniqueKey(long) },
	} {
		if key, err := build(); !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("%s: %q, %v; want ErrInvalidKey", name, key, err)
		}
	}
	if key, err := table.UniqueKey(long[1:]); err != nil || len(key) != table.MaxKeyBytes {
		t.Errorf("a key of exactly %d bytes: %d bytes, %v", table.MaxKeyBytes, len(key), err)
	}
}

// hostile are parts a sender might choose to reach another namespace's items: their
// exact stored forms, their namespaces, separators, and the empty string.
var hostile = []string{
	"unique#order-42", "scheduler#lease#default", "scheduler#schedule#nightly", "idempotency##k",
	"idempotency#webhook#d-1", "unique", "unique#", "#", "##", "", "limit#x", "job#", "cancel#j",
	"idempotency", "scheduler#lease#", "batch#b#1",
}

// FuzzKeysOfDifferentNamespacesNeverMeet is the disjointness proof, by property: for any
// parts, a key of one namespace neither equals nor is a prefix of a key of another, its
// namespace is read back from it, and within a namespace a fixed layout gives distinct
// keys for distinct parts (the parts are read back from the key).
func FuzzKeysOfDifferentNamespacesNeverMeet(f *testing.F) {
	for i, a := range hostile {
		for j, b := range hostile {
			f.Add(uint8(i), uint8(j), a, b, "k", 2)
		}
	}
	namespaces := table.Namespaces()
	f.Fuzz(func(t *testing.T, nsA, nsB uint8, first, last, other string, arity int) {
		a, b := namespaces[int(nsA)%len(namespaces)], namespaces[int(nsB)%len(namespaces)]
		arity = 1 + ((arity%3)+3)%3 // 1 to 3 parts
		partsA := layout(arity, first, last)
		partsB := layout(arity, other, first)
		keyA, errA := table.Key(a, partsA...)
		keyB, errB := table.Key(b, partsB...)
		for _, c := range []struct {
			ns    table.Namespace
			key   string
			parts []string
			err   error
		}{{a, keyA, partsA, errA}, {b, keyB, partsB, errB}} {
			if c.err != nil {
				if !errors.Is(c.err, table.ErrInvalidKey) {
					t.Fatalf("Key(%s, %q): %v does not match ErrInvalidKey", c.ns, c.parts, c.err)
				}
				continue
			}
			if got, ok := table.NamespaceOf(c.key); !ok || got != c.ns {
				t.Fatalf("NamespaceOf(%q) = %q, %t; want %q", c.key, got, ok, c.ns)
			}
			// Within the namespace the key gives its parts back: the layout is injective.
			back := strings.SplitN(strings.TrimPrefix(c.key, string(c.ns)+table.Separator), table.Separator, len(c.parts))
			if !slices.Equal(back, c.parts) {
				t.Fatalf("key %q reads back as %q; want %q", c.key, back, c.parts)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		if a != b && (keyA == keyB || strings.HasPrefix(keyA, keyB) || strings.HasPrefix(keyB, keyA)) {
			t.Fatalf("namespaces %s and %s meet: %q and %q", a, b, keyA, keyB)
		}
		if a == b && (keyA == keyB) != slices.Equal(partsA, partsB) {
			t.Fatalf("namespace %s: parts %q and %q give keys %q and %q", a, partsA, partsB, keyA, keyB)
		}
	})
}

// layout makes arity parts: the non-final ones from head with its "#" removed (a layout
// never puts a "#" there), the last one as it is.
func layout(arity int, head, last string) []string {
	parts := make([]string, arity)
	for i := range arity - 1 {
		parts[i] = strings.ReplaceAll(head, table.Separator, "") + strings.Repeat("x", i)
	}
	parts[arity-1] = last
	return parts
}

func TestNamespaceOfForeignKeys(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"webhook#d-1", "d-1", "", "#x", "uniquex#1", "Unique#1"} {
		if ns, ok := table.NamespaceOf(key); ok {
			t.Errorf("NamespaceOf(%q) = %q; want none", key, ns)
		}
	}
}

// TestLimitLayoutsNeverMeet: the fleet-wide limits' two layouts start with different
// fixed parts ("permits", "rate") that no limit name or key can stand in for (a name
// holds no "#"), so a permits item and a rate item never share a key, whatever the
// sender-chosen key holds; and every such key is in the limits namespace.
func TestLimitLayoutsNeverMeet(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, name := range []string{"api", "rate", "permits", "0", "x"} {
		for _, key := range hostile {
			if key == "" {
				continue
			}
			for shard := range 3 {
				permits, err := table.LimitPermitsKey(name, shard, key)
				if err != nil {
					t.Fatal(err)
				}
				rate, err := table.LimitRateKey(name, shard, key)
				if err != nil {
					t.Fatal(err)
				}
				for kind, k := range map[string]string{"permits " + name + " " + strconv.Itoa(shard) + " " + key: permits, "rate " + name + " " + strconv.Itoa(shard) + " " + key: rate} {
					if ns, _ := table.NamespaceOf(k); ns != table.Limits {
						t.Errorf("%q is in namespace %q", k, ns)
					}
					if other, ok := seen[k]; ok && other != kind {
						t.Errorf("%s and %s share the key %q", other, kind, k)
					}
					seen[k] = kind
				}
			}
		}
	}
	if _, err := table.LimitRateKey("a#b", 0, "k"); !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("a limit name with %q: %v; want ErrInvalidKey", table.Separator, err)
	}
}

// TestBatchLayoutsNeverMeet: a batch's item, its shards and its job markers start with
// different fixed parts ("meta", "shard", "job"), so no job id (chosen by the sender, the
// marker's last part) makes a marker's key equal a batch item's or a shard's; every such
// key is in the batches namespace, and a batch id holding "#" is refused.
func TestBatchLayoutsNeverMeet(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	record := func(kind, k string) {
		if ns, _ := table.NamespaceOf(k); ns != table.Batches {
			t.Errorf("%q is in namespace %q", k, ns)
		}
		if other, ok := seen[k]; ok && other != kind {
			t.Errorf("%s and %s share the key %q", other, kind, k)
		}
		seen[k] = kind
	}
	for _, batch := range []string{"01KBQ2ZP5E8Y9V0D2X4M6N8R1T", "meta", "shard", "job", "0"} {
		k, err := table.BatchKey(batch)
		if err != nil {
			t.Fatal(err)
		}
		record("meta "+batch, k)
		for shard := range 3 {
			k, err := table.BatchShardKey(batch, shard)
			if err != nil {
				t.Fatal(err)
			}
			record("shard "+batch+" "+strconv.Itoa(shard), k)
		}
		for _, job := range hostile {
			if job == "" {
				continue
			}
			for _, forged := range []string{job, "x#meta#" + batch, batch + "#0", "#" + batch} {
				k, err := table.BatchJobKey(batch, forged)
				if err != nil {
					t.Fatal(err)
				}
				record("job "+batch+" "+forged, k)
			}
		}
	}
	if _, err := table.BatchShardKey("a#b", 0); !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("a batch id with # makes a shard key: %v", err)
	}
	if _, err := table.BatchJobKey("a#b", "j"); !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("a batch id with # makes a marker key: %v", err)
	}
}
