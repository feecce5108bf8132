package delivery

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sqsworker/sqsworker"
)

// loopback lets the tests' httptest servers (on 127.0.0.1) through the destination guard.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// countingServer is a receiver on 127.0.0.1 that counts the requests reaching it.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var requests atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	t.Cleanup(server.Close)
	return server, &requests
}

// TestHandlerRefusesNonPublicDestinations: with the default configuration, a URL that
// leads to this host (by address, by name, IPv4-mapped, 0.0.0.0) or to a link-local or
// private address (the instance metadata service, a VPC address) fails permanently with
// reason ForbiddenDestination and no request reaches the receiver; the same URLs with
// loopback in AllowNetworks are delivered. Before the guard, every one was posted (or
// retried for ever where nothing listens).
func TestHandlerRefusesNonPublicDestinations(t *testing.T) {
	server, requests := countingServer(t)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(server.URL, "http://"))
	require.NoError(t, err)
	for _, target := range []string{
		server.URL + "/hooks/x",
		"http://localhost:" + port + "/hooks/x",
		"http://[::ffff:127.0.0.1]:" + port + "/hooks/x",
		"http://0.0.0.0:" + port + "/hooks/x",
		"http://169.254.169.254/latest/meta-data/iam/security-credentials/",
		"http://10.0.0.5:9/internal",
		"http://[fd00:ec2::254]/latest/meta-data/",
	} {
		err := Handler(Config{}).Handle(context.Background(), message(body(target)))
		outcome := sqsworker.Classify(err)
		assert.Equal(t, sqsworker.OutcomeDeadLetter, outcome.Kind, "%s: %v", target, err)
		assert.Equal(t, ReasonForbiddenDestination, outcome.Reason, target)
		var refused *DestinationError
		assert.True(t, errors.As(err, &refused), "%s: %v is no *DestinationError", target, err)
		assert.NotContains(t, err.Error(), "hooks/x", "the error names the target redacted")
	}
	assert.Zero(t, requests.Load(), "a refused destination was posted to")

	for _, target := range []string{server.URL + "/hooks/x", "http://localhost:" + port + "/hooks/x"} {
		require.NoError(t, Handler(Config{AllowNetworks: loopback}).Handle(context.Background(), message(body(target))), target)
	}
	assert.EqualValues(t, 2, requests.Load())
}

// TestHandlerRefusesANameResolvingToLoopback: the guard judges the address a name
// resolves to when the connection is made, not the URL's text, so a public-looking name
// whose DNS answer is 127.0.0.1 (DNS rebinding: a name that answered a public address a
// moment before) is refused. A DNS server on 127.0.0.1 answers every A query with
// 127.0.0.1 and a TTL of 0.
func TestHandlerRefusesANameResolvingToLoopback(t *testing.T) {
	server, requests := countingServer(t)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(server.URL, "http://"))
	require.NoError(t, err)
	resolver, queries := fakeDNS(t, netip.MustParseAddr("127.0.0.1"))
	target := "http://hooks.rebinding.example:" + port + "/hooks/x"

	err = Handler(Config{resolver: resolver}).Handle(context.Background(), message(body(target)))
	assert.Equal(t, ReasonForbiddenDestination, sqsworker.Classify(err).Reason, "%v", err)
	assert.ErrorContains(t, err, "destination 127.0.0.1 refused: a loopback address")
	assert.Zero(t, requests.Load())
	assert.NotZero(t, queries.Load(), "the name was resolved through the fake DNS server")

	require.NoError(t, Handler(Config{resolver: resolver, AllowNetworks: loopback}).Handle(context.Background(), message(body(target))))
	assert.EqualValues(t, 1, requests.Load())
}

// fakeDNS serves DNS on 127.0.0.1 over UDP: every A query is answered with answer (TTL
// 0), every other query with no record. It returns a resolver using it and the number of
// queries served.
func fakeDNS(t *testing.T, answer netip.Addr) (*net.Resolver, *atomic.Int32) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	var queries atomic.Int32
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			queries.Add(1)
			if reply := dnsReply(buf[:n], answer); reply != nil {
				_, _ = conn.WriteTo(reply, from)
			}
		}
	}()
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", conn.LocalAddr().String())
	}}
	return resolver, &queries
}

// dnsReply answers one DNS query (RFC 1035 §4.1): the header and question echoed, and
// for type A one answer record pointing back at the question's name.
func dnsReply(query []byte, answer netip.Addr) []byte {
	if len(query) < 12 {
		return nil
	}
	end := 12
	for end < len(query) && query[end] != 0 {
		end += int(query[end]) + 1
	}
	end += 5 // the root label, QTYPE and QCLASS
	if end > len(query) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(query[end-4:])
	reply := append([]byte{}, query[:end]...)
	binary.BigEndian.PutUint16(reply[2:], 0x8180) // a response, recursion desired and available, no error
	binary.BigEndian.PutUint16(reply[4:], 1)      // one question
	binary.BigEndian.PutUint16(reply[8:], 0)      // no authority records
	binary.BigEndian.PutUint16(reply[10:], 0)     // no additional records
	if qtype != 1 {
		binary.BigEndian.PutUint16(reply[6:], 0)
		return reply
	}
	binary.BigEndian.PutUint16(reply[6:], 1)
	ip := answer.As4()
	return append(reply, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, ip[0], ip[1], ip[2], ip[3])
}

func TestRefusal(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":          "loopback",
		"::1":                "loopback",
		"::ffff:127.0.0.1":   "loopback",
		"10.1.2.3":           "private",
		"172.16.0.1":         "private",
		"192.168.1.1":        "private",
		"fd00:ec2::254":      "private",
		"169.254.169.254":    "link-local",
		"fe80::1%eth0":       "link-local",
		"0.0.0.0":            "unspecified",
		"::":                 "unspecified",
		"0.1.2.3":            "this-network",
		"100.100.100.200":    "shared (carrier-grade NAT)",
		"224.0.0.1":          "multicast",
		"255.255.255.255":    "broadcast",
		"64:ff9b::7f00:1":    "loopback", // NAT64 of 127.0.0.1
		"64:ff9b::a00:5":     "private",  // NAT64 of 10.0.0.5
		"2002:7f00:1::1":     "6to4",
		"93.184.215.14":      "",
		"64:ff9b::5db8:d70e": "", // NAT64 of 93.184.215.14
		"2606:4700::1111":    "",
	} {
		assert.Equal(t, want, refusal(netip.MustParseAddr(addr)), addr)
	}
}

func TestParseNetworks(t *testing.T) {
	networks, err := ParseNetworks(" 127.0.0.1/32, 10.0.0.0/8 ,::1, 192.168.1.7/24,")
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{
		netip.MustParsePrefix("127.0.0.1/32"), netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("192.168.1.0/24"),
	}, networks)
	_, err = ParseNetworks("127.0.0.1/32,localhost")
	assert.ErrorContains(t, err, `"localhost" is neither an IP prefix`)
	networks, err = ParseNetworks("")
	require.NoError(t, err)
	assert.Empty(t, networks)
}
