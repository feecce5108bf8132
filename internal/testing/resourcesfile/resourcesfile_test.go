package resourcesfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sqsworker/sqsworker/internal/testing/resourcesfile"
)

func TestModuleResourcesFileIsValid(t *testing.T) {
	resources, err := resourcesfile.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	queue := resources.Queue("webhook-deliveries")
	if queue == nil || queue.DeadLetterQueue == nil || queue.DeadLetterQueue.Name != "webhook-deliveries-dlq" {
		t.Fatalf("webhook-deliveries with dead-letter queue webhook-deliveries-dlq not found in %+v", resources.Queues)
	}
	if queue.VisibilityTimeoutSeconds != 30 || queue.MaxReceiveCount != 5 {
		t.Errorf("webhook-deliveries: visibility %d s, maxReceiveCount %d; the demo relies on 30 s and 5",
			queue.VisibilityTimeoutSeconds, queue.MaxReceiveCount)
	}
	if len(resources.Tables) != 1 || resources.Tables[0].Name != "webhook-idempotency" || resources.Tables[0].PartitionKey != "id" {
		t.Errorf("tables = %+v, want webhook-idempotency keyed by id", resources.Tables)
	}
}

func TestModuleRootWalksUp(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := resourcesfile.ModuleRoot(deep)
	if err != nil {
		t.Fatalf("ModuleRoot: %v", err)
	}
	if want, _ := filepath.EvalSymlinks(root); got != root && got != want {
		t.Errorf("ModuleRoot(%s) = %s, want %s", deep, got, root)
	}
}
