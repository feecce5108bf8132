package delivery

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
)

// ReasonForbiddenDestination is the [sqsworker.PermanentError] reason for a delivery
// whose URL leads to an address the destination guard refuses (see [Config]).
const ReasonForbiddenDestination = "ForbiddenDestination"

// DestinationError is the error of a connection the destination guard refused: the
// address is not a public unicast one and no Config.AllowNetworks prefix holds it.
type DestinationError struct {
	// Address is the IP address the URL's host resolved to.
	Address netip.Addr
	// Kind says why it is refused: "loopback", "private", "link-local", ...
	Kind string
}

// Error returns "destination 127.0.0.1 refused: a loopback address (...)".
func (e *DestinationError) Error() string {
	return fmt.Sprintf("destination %s refused: a %s address (only public addresses are delivered to; Config.AllowNetworks allows others)", e.Address, e.Kind)
}

// nonPublic are the special-purpose IPv4 and IPv6 ranges (IANA's registries, RFC 6890)
// that netip.Addr has no predicate for; netip's cover loopback, private (RFC 1918, RFC
// 4193), link-local, multicast and unspecified.
var nonPublic = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
}

// nat64 is the well-known NAT64 prefix (RFC 6052): an IPv6-only network with DNS64
// reaches IPv4 hosts through it, so the IPv4 address it embeds is the one judged.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// refusal returns why addr is not a public unicast address, "" when it is one.
func refusal(addr netip.Addr) string {
	addr = addr.Unmap().WithZone("")
	if nat64.Contains(addr) {
		embedded := addr.As16()
		addr = netip.AddrFrom4([4]byte(embedded[12:]))
	}
	switch {
	case !addr.IsValid():
		return "invalid"
	case addr.IsLoopback():
		return "loopback"
	case addr.IsPrivate():
		return "private"
	case addr.IsLinkLocalUnicast():
		return "link-local"
	case addr.IsUnspecified():
		return "unspecified"
	case addr.IsMulticast() || addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast():
		return "multicast"
	case addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	for _, special := range nonPublic {
		if special.prefix.Contains(addr) {
			return special.kind
		}
	}
	return ""
}

// guard is the dialer's Control function: it runs for every connection attempt, on the
// address the host name resolved to, so a name that resolves to a public address for a
// check and to a private one for the connection (DNS rebinding) is still refused.
func guard(allow []netip.Prefix) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		addrPort, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("delivery: destination guard: %s address %q: %w", network, address, err)
		}
		addr := addrPort.Addr().Unmap().WithZone("")
		kind := refusal(addr)
		if kind == "" {
			return nil
		}
		for _, prefix := range allow {
			if prefix.Contains(addr) {
				return nil
			}
		}
		return &DestinationError{Address: addr, Kind: kind}
	}
}

// guardedClient is the default client of [Handler]: it follows no redirect (a redirected
// POST would lose its body or its method), uses no proxy (a proxy would hide the
// destination from the guard) and connects only to addresses the guard lets through.
func guardedClient(allow []netip.Prefix, resolver *net.Resolver) *http.Client {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.Proxy = nil
	transport.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: guard(allow), Resolver: resolver}).DialContext
	return &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ParseNetworks reads a comma-separated list of IP prefixes ("127.0.0.1/32, fd00::/8")
// or addresses (taken as a prefix of their full length) for Config.AllowNetworks.
func ParseNetworks(list string) ([]netip.Prefix, error) {
	var prefixes []netip.Prefix
	for field := range strings.SplitSeq(list, ",") {
		if field = strings.TrimSpace(field); field == "" {
			continue
		}
		prefix, err := netip.ParsePrefix(field)
		if err != nil {
			addr, addrErr := netip.ParseAddr(field)
			if addrErr != nil {
				return nil, fmt.Errorf("%q is neither an IP prefix such as 127.0.0.1/32 nor an IP address", field)
			}
			prefix = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
		}
		prefixes = append(prefixes, prefix.Masked())
	}
	return prefixes, nil
}
