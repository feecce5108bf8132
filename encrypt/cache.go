package encrypt

import (
	"container/list"
	"sync"
	"time"
)

// cache is a bounded LRU of plaintext data keys with a time to live: at most size
// entries, each dropped ttl after it was stored or when the least recently used one
// makes room. It is safe for concurrent use.
type cache[V any] struct {
	size int
	ttl  time.Duration
	now  func() time.Time

	mu      sync.Mutex
	order   *list.List // front: most recently used
	entries map[string]*list.Element
}

type cacheEntry[V any] struct {
	key     string
	value   V
	expires time.Time
}

func newCache[V any](size int, ttl time.Duration, now func() time.Time) *cache[V] {
	return &cache[V]{size: size, ttl: ttl, now: now, order: list.New(), entries: map[string]*list.Element{}}
}

// get returns the live value of key.
func (c *cache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	element, ok := c.entries[key]
	if !ok {
		return zero, false
	}
	entry := element.Value.(*cacheEntry[V])
	if !c.now().Before(entry.expires) {
		c.order.Remove(element)
		delete(c.entries, key)
		return zero, false
	}
	c.order.MoveToFront(element)
	return entry.value, true
}

// put stores value under key for ttl, evicting the least recently used entry when full.
func (c *cache[V]) put(key string, value V) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if element, ok := c.entries[key]; ok {
		c.order.Remove(element)
		delete(c.entries, key)
	}
	for c.order.Len() >= c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry[V]).key)
	}
	c.entries[key] = c.order.PushFront(&cacheEntry[V]{key: key, value: value, expires: c.now().Add(c.ttl)})
}

// remove drops key.
func (c *cache[V]) remove(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if element, ok := c.entries[key]; ok {
		c.order.Remove(element)
		delete(c.entries, key)
	}
}

// len returns the number of entries, expired ones included until they are read.
func (c *cache[V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
