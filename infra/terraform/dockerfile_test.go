package terraform_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pinnedImage is a base image with its tag and a sha256 digest: name:tag@sha256:<64 hex>.
var pinnedImage = regexp.MustCompile(`^[a-z0-9./-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)

// TestDockerfileBaseImagesArePinned: every FROM of the image poller-service runs names a
// tag and a digest, so a rebuild of a commit uses the same bases.
func TestDockerfileBaseImagesArePinned(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	froms := 0
	for line := range strings.SplitSeq(string(text), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		froms++
		image := fields[1]
		if strings.HasPrefix(image, "--platform=") && len(fields) > 2 {
			image = fields[2]
		}
		if !pinnedImage.MatchString(image) {
			t.Errorf("Dockerfile: FROM %s is not pinned as name:tag@sha256:<digest>", image)
		}
	}
	if froms != 2 {
		t.Errorf("Dockerfile has %d FROM lines, want 2 (build and runtime)", froms)
	}
}
