package terraform_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/sqsworker/sqsworker/scheduler"
)

// The eventbridge-schedules module reads the container scheduler's definition file
// (scheduler.ReadSchedules); these are its inputs for the shared validation tests.

const (
	schedulesQueueARN = "arn:aws:sqs:us-east-1:123456789012:reports"
	schedulesDLQARN   = "arn:aws:sqs:us-east-1:123456789012:reports-scheduler-dlq"

	goodSchedules = `{"schedules": [
		{"name": "nightly-report", "cron": "30 2 * * *", "time_zone": "Europe/Berlin", "job_type": "report", "payload": {"format": "pdf"}, "queue": "reports", "catch_up": 3, "jitter": "5m"},
		{"name": "weekday-digest", "cron": "0 9 * * MON-FRI", "time_zone": "America/New_York", "job_type": "digest", "queue": "https://sqs.us-east-1.amazonaws.com/123456789012/reports"},
		{"name": "first-of-month", "cron": "0 6 1 * ?", "job_type": "invoice", "queue": "reports", "jitter": "90s"},
		{"name": "sync", "cron": "@every 15m", "job_type": "sync", "queue": "reports"},
		{"name": "hourly", "cron": "@every 1h", "job_type": "sync", "payload": {}, "queue": "reports"},
		{"name": "weekly", "cron": "@weekly", "job_type": "cleanup", "queue": "reports"}
	]}`

	badCronSchedules = `{"schedules": [
		{"name": "seconds", "cron": "*/10 * * * * *", "job_type": "t", "queue": "reports"},
		{"name": "numeric-days", "cron": "0 9 * * 1-5", "job_type": "t", "queue": "reports"},
		{"name": "fine", "cron": "@daily", "job_type": "t", "queue": "reports"}
	]}`
)

func init() {
	baseValues["eventbridge-schedules"] = map[string]any{
		"name":                  "reports",
		"schedules_json":        goodSchedules,
		"queue_arn":             schedulesQueueARN,
		"dead_letter_queue_arn": schedulesDLQARN,
	}
	one := func(schedule string) string { return `{"schedules": [` + schedule + `]}` }
	validationCases["eventbridge-schedules"] = []validationCase{
		{name: "base"},
		{name: "group name", vars: map[string]any{"name": "reports/nightly"}, reject: "name", want: []string{`("reports/nightly")`, "1-54 characters"}},
		{name: "not a definition file", vars: map[string]any{"schedules_json": `[{"name": "x"}]`}, reject: "schedules_json", want: []string{`{"schedules": [...]}`}},
		{name: "no schedules", vars: map[string]any{"schedules_json": `{"schedules": []}`}, reject: "schedules_json", want: []string{"at least one schedule"}},
		{name: "schedule name", vars: map[string]any{"schedules_json": one(`{"name": "nightly report", "cron": "@daily", "job_type": "t"}`)}, reject: "schedules_json", want: []string{`"nightly report"`, "1-64 characters"}},
		{name: "name twice", vars: map[string]any{"schedules_json": `{"schedules": [{"name": "a", "cron": "@daily", "job_type": "t"}, {"name": "a", "cron": "@hourly", "job_type": "t"}]}`}, reject: "schedules_json", want: []string{"unique", "a, a"}},
		{name: "cron EventBridge cannot run", vars: map[string]any{"schedules_json": badCronSchedules}, reject: "schedules_json", want: []string{`seconds ("*/10 * * * * *")`, `numeric-days ("0 9 * * 1-5")`, "MON-FRI"}},
		{name: "both day fields", vars: map[string]any{"schedules_json": one(`{"name": "x", "cron": "0 9 1 * MON", "job_type": "t"}`)}, reject: "schedules_json", want: []string{`x ("0 9 1 * MON")`, "at most one of day-of-month and day-of-week"}},
		{name: "every in seconds", vars: map[string]any{"schedules_json": one(`{"name": "x", "cron": "@every 30s", "job_type": "t"}`)}, reject: "schedules_json", want: []string{`x ("@every 30s")`}},
		{name: "no job type", vars: map[string]any{"schedules_json": one(`{"name": "x", "cron": "@daily", "job_type": ""}`)}, reject: "schedules_json", want: []string{"non-empty job_type", "invalid: x"}},
		{name: "payload not an object", vars: map[string]any{"schedules_json": one(`{"name": "x", "cron": "@daily", "job_type": "t", "payload": [1]}`)}, reject: "schedules_json", want: []string{"JSON object", "invalid: x"}},
		{name: "jitter compound", vars: map[string]any{"schedules_json": one(`{"name": "x", "cron": "@daily", "job_type": "t", "jitter": "1m30s"}`)}, reject: "schedules_json", want: []string{`x ("1m30s")`}},
		{name: "jitter above a day", vars: map[string]any{"schedules_json": one(`{"name": "x", "cron": "@daily", "job_type": "t", "jitter": "25h"}`)}, reject: "schedules_json", want: []string{"at most 24h", `x ("25h")`}},
		{name: "another queue", vars: map[string]any{"schedules_json": one(`{"name": "x", "cron": "@daily", "job_type": "t", "queue": "orders"}`)}, reject: "schedules_json", want: []string{`target queue "reports"`, "x (orders)"}},
		{name: "fifo queue", vars: map[string]any{"queue_arn": schedulesQueueARN + ".fifo"}, reject: "queue_arn", want: []string{"FIFO queues are not supported"}},
		{name: "wildcard queue", vars: map[string]any{"queue_arn": "arn:aws:sqs:us-east-1:123456789012:*"}, reject: "queue_arn", want: []string{"without wildcards"}},
		{name: "dlq is the queue", vars: map[string]any{"dead_letter_queue_arn": schedulesQueueARN}, reject: "dead_letter_queue_arn", want: []string{"other than queue_arn"}},
		{name: "retries 186", vars: map[string]any{"maximum_retry_attempts": 186}, reject: "maximum_retry_attempts", want: []string{"(186)", "0 to 185"}},
		{name: "event age 30", vars: map[string]any{"maximum_event_age_in_seconds": 30}, reject: "maximum_event_age_in_seconds", want: []string{"(30)", "60 to 86400"}},
		{name: "kms alias", vars: map[string]any{"kms_key_arns": []string{"alias/aws/sqs"}}, reject: "kms_key_arns", want: []string{"alias/aws/sqs"}},
		{name: "kms key", vars: map[string]any{"kms_key_arns": []string{keyARN}}},
	}
}

// evalLocals evaluates a module's locals for the given variables, in the order they are
// declared (each may use the ones before it), with Terraform's functions.
func evalLocals(t *testing.T, c *config, vars map[string]cty.Value) map[string]cty.Value {
	t.Helper()
	functions := map[string]function.Function{
		"can": tryfunc.CanFunc, "try": tryfunc.TryFunc, "ceil": stdlib.CeilFunc, "contains": stdlib.ContainsFunc,
		"format": stdlib.FormatFunc, "jsondecode": stdlib.JSONDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc,
		"keys": stdlib.KeysFunc, "merge": stdlib.MergeFunc, "regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc,
		"replace": stdlib.ReplaceFunc, "trimspace": stdlib.TrimSpaceFunc,
	}
	locals := map[string]cty.Value{}
	for _, file := range c.files {
		for _, block := range file.body.Blocks {
			if block.Type != "locals" {
				continue
			}
			for _, attr := range sortedAttributes(block) {
				ctx := &hcl.EvalContext{
					Variables: map[string]cty.Value{"var": cty.ObjectVal(vars), "local": cty.ObjectVal(locals)},
					Functions: functions,
				}
				value, diags := attr.Expr.Value(ctx)
				if diags.HasErrors() {
					t.Fatalf("local.%s: %s", attr.Name, diags.Error())
				}
				locals[attr.Name] = value
			}
		}
	}
	return locals
}

// The module turns each schedule of the definition file into the EventBridge Scheduler
// expression, time zone, flexible window and message body it stands for.
func TestEventBridgeSchedulesTranslateTheDefinitionFile(t *testing.T) {
	module := loadModule(t, "eventbridge-schedules")
	locals := evalLocals(t, module, map[string]cty.Value{"schedules_json": cty.StringVal(goodSchedules)})
	wantExpressions := map[string]string{
		"nightly-report": "cron(30 2 * * ? *)",
		"weekday-digest": "cron(0 9 ? * MON-FRI *)",
		"first-of-month": "cron(0 6 1 * ? *)",
		"sync":           "rate(15 minutes)",
		"hourly":         "rate(1 hour)",
		"weekly":         "cron(0 0 ? * SUN *)",
	}
	wantWindows := map[string]int64{"nightly-report": 5, "first-of-month": 2}
	wantInputs := map[string]map[string]any{
		"nightly-report": {"format": "pdf", "job_type": "report"},
		"weekday-digest": {"job_type": "digest"},
		"hourly":         {"job_type": "sync"},
	}
	for name, want := range wantExpressions {
		if got := locals["expressions"].GetAttr(name).AsString(); got != want {
			t.Errorf("%s: expression %s, want %s", name, got, want)
		}
		window, _ := locals["window_minutes"].GetAttr(name).AsBigFloat().Int64()
		if window != wantWindows[name] {
			t.Errorf("%s: flexible window %d minutes, want %d", name, window, wantWindows[name])
		}
		if input, ok := wantInputs[name]; ok {
			var got map[string]any
			if err := json.Unmarshal([]byte(locals["inputs"].GetAttr(name).AsString()), &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(input) || got["job_type"] != input["job_type"] || got["format"] != input["format"] {
				t.Errorf("%s: input %v, want %v", name, got, input)
			}
		}
	}
	// The time zone goes through as written (UTC when none).
	for name, zone := range map[string]string{"nightly-report": "Europe/Berlin", "sync": ""} {
		if got := locals["definitions"].GetAttr(name); zone != "" && got.GetAttr("time_zone").AsString() != zone {
			t.Errorf("%s: time zone %s", name, got.GetAttr("time_zone").AsString())
		}
	}
	schedule := module.block(t, "resource", "aws_scheduler_schedule", "this")
	if text := module.text(schedule.Body.Attributes["schedule_expression_timezone"].Expr.Range()); text != `try(each.value.time_zone, "") == "" ? "UTC" : each.value.time_zone` {
		t.Errorf("schedule_expression_timezone = %s", text)
	}
	target := module.text(schedule.Range())
	for _, want := range []string{"dead_letter_config { arn = var.dead_letter_queue_arn }", "retry_policy {", "maximum_retry_attempts = var.maximum_retry_attempts", "input = local.inputs[each.key]"} {
		if !strings.Contains(target, want) {
			t.Errorf("aws_scheduler_schedule.this lacks %q", want)
		}
	}
	// The field the job type travels in is the one the scheduler package names.
	if !strings.Contains(module.text(module.local(t, "inputs").Range()), "job_type = s.job_type") || scheduler.JobTypeField != "job_type" {
		t.Errorf("the body's job type field differs from scheduler.JobTypeField %q", scheduler.JobTypeField)
	}
}

// One definition file serves both: the container scheduler parses the module README's
// example file, and the module accepts it.
func TestEventBridgeSchedulesShareTheContainerFormat(t *testing.T) {
	path := filepath.Join(terraformDir(t), "modules", "eventbridge-schedules", "schedules.example.json")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scheduler.ParseSchedules(src); err != nil {
		t.Fatalf("the container scheduler refuses %s: %v", path, err)
	}
	if _, err := scheduler.ParseSchedules([]byte(goodSchedules)); err != nil {
		t.Fatalf("the container scheduler refuses the test's definitions: %v", err)
	}
	module := loadModule(t, "eventbridge-schedules")
	if failures := module.validate(t, merged(baseValues["eventbridge-schedules"], map[string]any{"schedules_json": string(src)})); len(failures) > 0 {
		t.Fatalf("the module refuses %s: %v", path, failures)
	}
}

// sortedAttributes returns a block's attributes in source order.
func sortedAttributes(block *hclsyntax.Block) []*hclsyntax.Attribute {
	attrs := slices.Collect(maps.Values(block.Body.Attributes))
	slices.SortFunc(attrs, func(a, b *hclsyntax.Attribute) int { return a.SrcRange.Start.Byte - b.SrcRange.Start.Byte })
	return attrs
}
