//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package receiver

import "net"

// peerClosed cannot peek on this platform; the request context alone tells whether the
// client went away.
func peerClosed(net.Conn) (bool, error) { return false, errNoPeek }
