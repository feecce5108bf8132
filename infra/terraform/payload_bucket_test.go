package terraform_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

const (
	bucketARN    = "arn:aws:s3:::webhook-deliveries-payloads"
	days         = 86400
	fourteenDays = 14 * days
)

// The payload bucket's grants, producer and consumer documents together, by resource:
// objects only under the prefix, ListBucket only on the bucket (with an s3:prefix
// condition, checked below). KMS grants stay in worker-permissions.
var payloadBucketGrants = map[string][]string{
	"aws_s3_bucket.this":        {"s3:ListBucket"},
	"local.payload_objects_arn": {"s3:DeleteObject", "s3:GetObject", "s3:PutObject"},
}

func init() {
	baseValues["payload-bucket"] = map[string]any{
		"name":                            "webhook-deliveries-payloads",
		"queue_message_retention_seconds": 4 * days,
		"dlq_message_retention_seconds":   fourteenDays,
	}
	validationCases["payload-bucket"] = []validationCase{
		{name: "defaults: 32 days > 4 + 14", vars: nil},
		{name: "one day more than both retentions", vars: map[string]any{"expiration_days": 19}},
		{name: "longest retentions, default expiration", vars: map[string]any{"queue_message_retention_seconds": fourteenDays, "dlq_message_retention_seconds": fourteenDays}},
		// CASES.md N21 (e).
		{name: "N21 (e): 7 days against 14 + 14", vars: map[string]any{"queue_message_retention_seconds": fourteenDays, "dlq_message_retention_seconds": fourteenDays, "expiration_days": 7},
			reject: "expiration_days", want: []string{"claim-check bucket expiration (7d) must exceed queue + DLQ retention (28d)"}},
		{name: "equal to both retentions", vars: map[string]any{"expiration_days": 18}, reject: "expiration_days", want: []string{"(18d)", "(18d)"}},
		{name: "fractional days", vars: map[string]any{"expiration_days": 20.5}, reject: "expiration_days", want: []string{"(20.5d)", "whole days"}},
		{name: "uppercase bucket", vars: map[string]any{"name": "Payloads"}, reject: "name", want: []string{`"Payloads"`, "3-63"}},
		{name: "bucket named like an IP address", vars: map[string]any{"name": "192.168.1.1"}, reject: "name", want: []string{"IP address"}},
		{name: "empty prefix", vars: map[string]any{"key_prefix": ""}},
		{name: "nested prefix", vars: map[string]any{"key_prefix": "jobs/large/"}},
		{name: "prefix without its slash", vars: map[string]any{"key_prefix": "jobs"}, reject: "key_prefix", want: []string{`"jobs"`, `followed by "/"`}},
		{name: "dot-dot prefix", vars: map[string]any{"key_prefix": "jobs/../"}, reject: "key_prefix", want: []string{`".."`}},
		{name: "percent in the prefix", vars: map[string]any{"key_prefix": "jobs%2F/"}, reject: "key_prefix", want: []string{"safe key characters"}},
		{name: "queue retention above 14 days", vars: map[string]any{"queue_message_retention_seconds": fourteenDays + 1}, reject: "queue_message_retention_seconds", want: []string{"(1209601)"}},
		{name: "dlq retention below 60 s", vars: map[string]any{"dlq_message_retention_seconds": 59}, reject: "dlq_message_retention_seconds", want: []string{"(59)"}},
		{name: "kms key", vars: map[string]any{"kms_key_arn": keyARN}},
		{name: "kms alias", vars: map[string]any{"kms_key_arn": "arn:aws:kms:us-east-1:123456789012:alias/aws/s3"}, reject: "kms_key_arn", want: []string{"alias/aws/s3", "without wildcards or aliases"}},
	}
}

// The bucket is private (every public access block setting, no ACLs), encrypted (SSE-S3,
// or SSE-KMS with a key), TLS only, and expires payloads under the prefix only.
func TestPayloadBucketIsPrivateEncryptedAndTLSOnly(t *testing.T) {
	module := loadModule(t, "payload-bucket")
	for _, setting := range []string{"block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"} {
		if got := constant(t, resourceAttr(t, module, "aws_s3_bucket_public_access_block", "this", setting), nil); !got.RawEquals(cty.True) {
			t.Errorf("public access block %s = %#v, want true", setting, got)
		}
	}
	if got := constant(t, resourceAttr(t, module, "aws_s3_bucket_ownership_controls", "this", "rule", "object_ownership"), nil); !got.RawEquals(cty.StringVal("BucketOwnerEnforced")) {
		t.Errorf("object_ownership = %#v, want BucketOwnerEnforced (ACLs off)", got)
	}

	withKey := func(key cty.Value) *hcl.EvalContext {
		return &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(map[string]cty.Value{"kms_key_arn": key})}}
	}
	for key, want := range map[cty.Value][2]cty.Value{
		cty.NullVal(cty.String): {cty.StringVal("AES256"), cty.False},
		cty.StringVal(keyARN):   {cty.StringVal("aws:kms"), cty.True},
	} {
		ctx := withKey(key)
		algorithm := constant(t, resourceAttr(t, module, "aws_s3_bucket_server_side_encryption_configuration", "this", "rule", "apply_server_side_encryption_by_default", "sse_algorithm"), ctx)
		bucketKey := constant(t, resourceAttr(t, module, "aws_s3_bucket_server_side_encryption_configuration", "this", "rule", "bucket_key_enabled"), ctx)
		if !algorithm.RawEquals(want[0]) || !bucketKey.RawEquals(want[1]) {
			t.Errorf("kms_key_arn %#v: sse_algorithm %#v, bucket_key_enabled %#v; want %#v, %#v", key, algorithm, bucketKey, want[0], want[1])
		}
	}

	t.Run("TLS-only bucket policy", func(t *testing.T) {
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{"aws_s3_bucket": cty.ObjectVal(map[string]cty.Value{
				"this": cty.ObjectVal(map[string]cty.Value{"arn": cty.StringVal(bucketARN), "id": cty.StringVal("webhook-deliveries-payloads")}),
			})},
			Functions: map[string]function.Function{"jsonencode": stdlib.JSONEncodeFunc},
		}
		var policy struct {
			Statement []struct {
				Effect, Principal, Action string
				Resource                  []string
				Condition                 map[string]map[string]string
			}
		}
		if err := json.Unmarshal([]byte(constant(t, resourceAttr(t, module, "aws_s3_bucket_policy", "this", "policy"), ctx).AsString()), &policy); err != nil {
			t.Fatal(err)
		}
		conditions := map[string]string{}
		for _, s := range policy.Statement {
			if s.Effect != "Deny" || s.Principal != "*" || s.Action != "s3:*" || fmt.Sprint(s.Resource) != fmt.Sprint([]string{bucketARN, bucketARN + "/*"}) {
				t.Errorf("statement %+v: want a Deny of s3:* to everyone on the bucket and its objects", s)
			}
			for operator, pairs := range s.Condition {
				for key, value := range pairs {
					conditions[operator+" "+key] = value
				}
			}
		}
		want := map[string]string{"Bool aws:SecureTransport": "false", "NumericLessThan s3:TlsVersion": "1.2"}
		if fmt.Sprint(conditions) != fmt.Sprint(want) {
			t.Errorf("deny conditions = %v, want %v", conditions, want)
		}
	})

	t.Run("lifecycle and policies scoped to the prefix", func(t *testing.T) {
		rule := module.text(module.block(t, "resource", "aws_s3_bucket_lifecycle_configuration", "this").Range())
		for _, want := range []string{`status = "Enabled"`, "prefix = var.key_prefix", "days = var.expiration_days", "days_after_initiation = 1"} {
			if !strings.Contains(strings.Join(strings.Fields(rule), " "), want) {
				t.Errorf("lifecycle rule lacks %q", want)
			}
		}
		if got := module.text(module.local(t, "payload_objects_arn").Range()); got != `"${aws_s3_bucket.this.arn}/${var.key_prefix}*"` {
			t.Errorf("payload_objects_arn = %s, want the bucket ARN, the prefix and *", got)
		}
		list := module.text(module.block(t, "data", "aws_iam_policy_document", "consumer").Range())
		for _, want := range []string{`test = "StringLike"`, `variable = "s3:prefix"`, `values = ["${var.key_prefix}*"]`} {
			if !strings.Contains(strings.Join(strings.Fields(list), " "), want) {
				t.Errorf("the consumer's ListBucket lacks %q", want)
			}
		}
	})
}

// The real CLI agrees: the N21 (e) settings fail with the message CASES.md names, the
// base settings plan.
func TestPayloadBucketValidationAgreesWithTerraformCLI(t *testing.T) {
	binary, err := exec.LookPath("terraform")
	if err != nil {
		if binary, err = exec.LookPath("tofu"); err != nil {
			t.Skip("neither terraform nor tofu is installed")
		}
	}
	src, err := os.ReadFile(filepath.Join(terraformDir(t), "modules", "payload-bucket", "variables.tf"))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(vars map[string]any) (string, error) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "variables.tf"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"plan", "-input=false", "-no-color", "-lock=false"}
		for name, value := range merged(baseValues["payload-bucket"], vars) {
			args = append(args, "-var", fmt.Sprintf("%s=%v", name, value))
		}
		cmd := exec.Command(binary, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE=/dev/null")
		raw, err := cmd.CombinedOutput()
		return strings.Join(strings.Fields(string(raw)), " "), err // the CLI wraps at 80 columns
	}
	if out, err := plan(nil); err != nil {
		t.Errorf("%s: base settings rejected: %v\n%s", binary, err, out)
	}
	out, err := plan(map[string]any{"queue_message_retention_seconds": fourteenDays, "dlq_message_retention_seconds": fourteenDays, "expiration_days": 7})
	if err == nil {
		t.Fatalf("%s: 7 days against 14 + 14 accepted", binary)
	}
	if want := "claim-check bucket expiration (7d) must exceed queue + DLQ retention (28d)"; !strings.Contains(out, want) || strings.Count(out, "Invalid value for variable") != 1 {
		t.Errorf("%s: want one invalid variable with %q:\n%s", binary, want, out)
	}
}
