//go:build linux || darwin || freebsd || netbsd || openbsd

package receiver

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed peeks at the socket without blocking and without consuming data: a read of
// 0 bytes means the peer closed the connection (FIN), an error other than "would block"
// means it reset it. Pending data or nothing to read means it is still there.
func peerClosed(connection net.Conn) (bool, error) {
	syscallConn, ok := connection.(syscall.Conn)
	if !ok {
		return false, errNoPeek
	}
	raw, err := syscallConn.SyscallConn()
	if err != nil {
		return false, err
	}
	closed := false
	err = raw.Control(func(fd uintptr) {
		buffer := make([]byte, 1)
		n, _, err := syscall.Recvfrom(int(fd), buffer, syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == nil:
			closed = n == 0
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
		default:
			closed = true
		}
	})
	return closed, err
}
