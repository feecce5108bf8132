package sqsinfo_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/sqsinfo"
)

func TestCheckMessageGroupID(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"tenant-1", "a", strings.Repeat("x", 128), "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"} {
		if err := sqsinfo.CheckMessageGroupID(ok); err != nil {
			t.Errorf("%q: %v; want accepted", ok, err)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 129), "a b", "é", "tab\t", "\x00"} {
		if err := sqsinfo.CheckMessageGroupID(bad); !errors.Is(err, sqsinfo.ErrInvalidMessageGroupID) {
			t.Errorf("%q: %v; want ErrInvalidMessageGroupID", bad, err)
		}
	}
}
