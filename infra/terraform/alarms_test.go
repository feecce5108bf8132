package terraform_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// The alarms module's inputs are all optional; its cases join the table of TestValidations.
func init() {
	baseValues["alarms"] = map[string]any{}
	validationCases["alarms"] = []validationCase{
		{name: "defaults", vars: nil},
		{name: "everything", vars: map[string]any{
			"queue_name": "jobs", "dlq_name": "jobs-dlq", "function_name": "jobs-consumer",
			"outbox_lag_metric_namespace": "sqsworker", "outbox_lag_metric_name": "outbox.lag",
			"create_sns_topic": true, "sns_topic_name": "jobs-alarms", "create_dashboard": true, "dashboard_name": "jobs",
			"alarm_actions": []string{"arn:aws:sns:us-east-1:123456789012:oncall"},
		}},
		{name: "age 0 s", vars: map[string]any{"oldest_message_age_threshold_seconds": 0}, reject: "oldest_message_age_threshold_seconds", want: []string{"(0)", "greater than 0"}},
		{name: "failure rate off", vars: map[string]any{"failure_rate_threshold_percent": nil}},
		{name: "failure rate 0 %", vars: map[string]any{"failure_rate_threshold_percent": 0}, reject: "failure_rate_threshold_percent", want: []string{"(0)", "less than 100"}},
		{name: "failure rate 100 %", vars: map[string]any{"failure_rate_threshold_percent": 100}, reject: "failure_rate_threshold_percent", want: []string{"(100)", "or null"}},
		{name: "failure rate 0.5 %", vars: map[string]any{"failure_rate_threshold_percent": 0.5}},
		{name: "min received 0", vars: map[string]any{"failure_rate_min_received": 0}, reject: "failure_rate_min_received", want: []string{"(0)", "at least 1"}},
		{name: "min received 2.5", vars: map[string]any{"failure_rate_min_received": 2.5}, reject: "failure_rate_min_received", want: []string{"(2.5)", "whole number"}},
		{name: "errors threshold -1", vars: map[string]any{"lambda_errors_threshold": -1}, reject: "lambda_errors_threshold", want: []string{"(-1)", "0 or more"}},
		{name: "throttles threshold -1", vars: map[string]any{"lambda_throttles_threshold": -1}, reject: "lambda_throttles_threshold", want: []string{"(-1)", "0 or more"}},
		{name: "outbox namespace without name", vars: map[string]any{"outbox_lag_metric_namespace": "sqsworker"}, reject: "outbox_lag_metric_namespace", want: []string{`outbox_lag_metric_namespace (sqsworker)`, "outbox_lag_metric_name (null)", "set together"}},
		{name: "outbox name without namespace", vars: map[string]any{"outbox_lag_metric_name": "outbox.lag"}, reject: "outbox_lag_metric_namespace", want: []string{"(null)", "(outbox.lag)"}},
		{name: "outbox in an AWS namespace", vars: map[string]any{"outbox_lag_metric_namespace": "AWS/SQS", "outbox_lag_metric_name": "lag"}, reject: "outbox_lag_metric_namespace", want: []string{"(AWS/SQS)", `"AWS/"`}},
		{name: "outbox threshold 0", vars: map[string]any{"outbox_lag_threshold_seconds": 0}, reject: "outbox_lag_threshold_seconds", want: []string{"(0)"}},
		{name: "alarm period 120 s", vars: map[string]any{"alarm_period_seconds": 120}},
		{name: "alarm period 90 s", vars: map[string]any{"alarm_period_seconds": 90}, reject: "alarm_period_seconds", want: []string{"(90)", "multiple of 60"}},
		{name: "alarm period 0 s", vars: map[string]any{"alarm_period_seconds": 0}, reject: "alarm_period_seconds", want: []string{"(0)", "multiple of 60"}},
		{name: "alarm evaluation periods 0", vars: map[string]any{"alarm_evaluation_periods": 0}, reject: "alarm_evaluation_periods", want: []string{"(0)", "at least 1"}},
		{name: "alarm action not an ARN", vars: map[string]any{"alarm_actions": []string{"oncall"}}, reject: "alarm_actions", want: []string{"(oncall)", "ARNs"}},
		{name: "topic without a name", vars: map[string]any{"create_sns_topic": true}, reject: "sns_topic_name", want: []string{"create_sns_topic is true"}},
		{name: "dashboard without a name", vars: map[string]any{"create_dashboard": true}, reject: "dashboard_name", want: []string{"(null)", "create_dashboard is true"}},
		{name: "dashboard name with a dot", vars: map[string]any{"create_dashboard": true, "dashboard_name": "jobs.fifo"}, reject: "dashboard_name", want: []string{"(jobs.fifo)", "1-255"}},
		{name: "dashboard name unused", vars: map[string]any{"dashboard_name": "jobs"}},
	}
}

// startsWithFunc is Terraform's startswith.
var startsWithFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "string", Type: cty.String}, {Name: "prefix", Type: cty.String}},
	Type:   function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return cty.BoolVal(strings.HasPrefix(args[0].AsString(), args[1].AsString())), nil
	},
})

// alarmResourceTypes are written only in modules/alarms.
var alarmResourceTypes = []string{"aws_cloudwatch_metric_alarm", "aws_cloudwatch_composite_alarm", "aws_sns_topic", "aws_cloudwatch_dashboard"}

// One place per alarm kind: no module but modules/alarms declares an alarm, a topic or a
// dashboard; the modules that watch something (worker-queue, lambda-consumer,
// eventbridge-schedules' dead-letter queue) call it with inputs it declares (there is no
// provider here for `terraform validate` to catch a misspelt argument), of the same type
// as their own pass-through variable; and worker-queue's moved blocks point at resources
// that exist, so upgrading keeps the existing alarms.
func TestAlarmsAreWrittenOnce(t *testing.T) {
	alarms := loadModule(t, "alarms")
	alarmVars := map[string]*variable{}
	for _, v := range alarms.variables {
		alarmVars[v.name] = v
	}
	for _, path := range allTerraformFiles(t) {
		if strings.Contains(path, filepath.Join("modules", "alarms")+string(filepath.Separator)) {
			continue
		}
		for _, block := range parseFile(t, path).body.Blocks {
			if block.Type == "resource" && slices.Contains(alarmResourceTypes, block.Labels[0]) {
				t.Errorf("%s: %s.%s: alarms, topics and dashboards belong in modules/alarms", path, block.Labels[0], block.Labels[1])
			}
		}
	}
	for _, name := range []string{"worker-queue", "lambda-consumer", "eventbridge-schedules"} {
		module := loadModule(t, name)
		own := map[string]*variable{}
		for _, v := range module.variables {
			own[v.name] = v
		}
		call := module.block(t, "module", "alarms")
		if got := literalString(t, call.Body.Attributes["source"].Expr); got != "../alarms" {
			t.Errorf("%s: module.alarms source = %q", name, got)
		}
		for arg, attr := range call.Body.Attributes {
			if slices.Contains([]string{"source", "count", "depends_on"}, arg) {
				continue
			}
			target, ok := alarmVars[arg]
			if !ok {
				t.Errorf("%s: module.alarms sets %s, which modules/alarms does not declare", name, arg)
				continue
			}
			if ref := module.text(attr.Expr.Range()); ref == "var."+arg {
				if v := own[arg]; v == nil || !v.typ.Equals(target.typ) || (v.def != cty.NilVal && v.defSrc != target.defSrc) {
					t.Errorf("%s: variable %s must have the type (and any default) of modules/alarms' (%s = %s)", name, arg, target.typeSrc, target.defSrc)
				}
			}
		}
		for _, v := range module.variables {
			target, ok := alarmVars[v.name]
			if !ok {
				continue
			}
			for _, rule := range v.validations {
				for _, other := range target.validations {
					if module.text(rule.condition.Range()) == alarms.text(other.condition.Range()) {
						t.Errorf("%s: variable %s repeats a validation of modules/alarms; keep the rule there", name, v.name)
					}
				}
			}
		}
	}
	queue := loadModule(t, "worker-queue")
	for _, moved := range queue.blocks("moved") {
		to := strings.TrimPrefix(queue.text(moved.Body.Attributes["to"].Expr.Range()), "module.alarms[0].")
		kind, label, _ := strings.Cut(to, ".")
		if len(alarms.blocks("resource", kind, label)) != 1 {
			t.Errorf("worker-queue: moved to %s, which modules/alarms does not declare", to)
		}
	}
}

// Each alarm watches the metric AWS documents for it, with the statistic, comparison and
// dimension that make its threshold mean what its input says.
func TestAlarmsWatchTheDocumentedMetrics(t *testing.T) {
	alarms := loadModule(t, "alarms")
	want := map[string][4]string{ // namespace, metric, statistic, dimension
		"dlq_messages_visible": {"AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", "QueueName"},
		"oldest_message_age":   {"AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", "QueueName"},
		"lambda_errors":        {"AWS/Lambda", "Errors", "Sum", "FunctionName"},
		"lambda_throttles":     {"AWS/Lambda", "Throttles", "Sum", "FunctionName"},
	}
	var names []string
	for _, block := range alarms.blocks("resource", "aws_cloudwatch_metric_alarm") {
		names = append(names, block.Labels[1])
		body := block.Body
		if got := alarms.text(body.Attributes["comparison_operator"].Expr.Range()); got != `"GreaterThanThreshold"` {
			t.Errorf("%s: comparison_operator = %s", block.Labels[1], got)
		}
		for _, attr := range []string{"alarm_actions", "ok_actions"} {
			if got := alarms.text(body.Attributes[attr].Expr.Range()); got != "local.alarm_actions" {
				t.Errorf("%s: %s = %s, want local.alarm_actions", block.Labels[1], attr, got)
			}
		}
		w, ok := want[block.Labels[1]]
		if !ok {
			continue
		}
		got := [4]string{
			literalString(t, body.Attributes["namespace"].Expr),
			literalString(t, body.Attributes["metric_name"].Expr),
			literalString(t, body.Attributes["statistic"].Expr),
		}
		dims, _ := body.Attributes["dimensions"].Expr.(*hclsyntax.ObjectConsExpr)
		if dims != nil && len(dims.Items) == 1 {
			got[3] = alarms.text(dims.Items[0].KeyExpr.Range())
		}
		if got != w {
			t.Errorf("%s: watches %v, want %v", block.Labels[1], got, w)
		}
	}
	if wantNames := []string{"dlq_messages_visible", "oldest_message_age", "failure_rate", "lambda_errors", "lambda_throttles", "outbox_lag"}; !slices.Equal(names, wantNames) {
		t.Errorf("alarms: %v, want %v", names, wantNames)
	}

	// The failure rate: receives and deletes of the queue, and the expression over them.
	failure := alarms.block(t, "resource", "aws_cloudwatch_metric_alarm", "failure_rate")
	queries := map[string]string{}
	for _, query := range failure.Body.Blocks {
		id := literalString(t, query.Body.Attributes["id"].Expr)
		for _, metric := range query.Body.Blocks {
			queries[id] = literalString(t, metric.Body.Attributes["metric_name"].Expr) + "/" + literalString(t, metric.Body.Attributes["stat"].Expr)
		}
		if expr, ok := query.Body.Attributes["expression"]; ok {
			queries[id] = alarms.text(expr.Expr.Range())
		}
	}
	if fmt.Sprint(queries) != fmt.Sprint(map[string]string{"received": "NumberOfMessagesReceived/Sum", "deleted": "NumberOfMessagesDeleted/Sum", "failure_rate": "local.failure_rate_expression"}) {
		t.Errorf("failure_rate queries = %v", queries)
	}
	locals := evalAlarmLocals(t, alarms, map[string]any{"failure_rate_min_received": 25}, nil)
	if got := locals["failure_rate_expression"].AsString(); got != "IF(received >= 25, 100 * (received - deleted) / received, 0)" {
		t.Errorf("failure_rate_expression = %q", got)
	}
}

// evalAlarmLocals evaluates the locals of modules/alarms/dashboard.tf for the given inputs,
// with the region and the alarm ARNs (which need a provider) given by the test.
func evalAlarmLocals(t *testing.T, c *config, values map[string]any, alarmARNs []string) map[string]cty.Value {
	t.Helper()
	object := map[string]cty.Value{}
	for _, v := range c.variables {
		if value, ok := values[v.name]; ok {
			object[v.name] = toCty(t, v.name, value, v.typ)
		} else {
			object[v.name] = v.def
		}
	}
	locals := map[string]cty.Value{"region": cty.StringVal("us-east-1"), "alarm_arns": toCty(t, "alarm_arns", alarmARNs, cty.List(cty.String))}
	if alarmARNs == nil {
		locals["alarm_arns"] = cty.ListValEmpty(cty.String)
	}
	functions := map[string]function.Function{
		"concat": stdlib.ConcatFunc, "distinct": stdlib.DistinctFunc, "flatten": stdlib.FlattenFunc,
		"jsonencode": stdlib.JSONEncodeFunc, "length": lengthFunc,
	}
	var pending []*hcl.Attribute
	for _, block := range c.blocks("locals") {
		if filepath.Base(block.Range().Filename) != "dashboard.tf" {
			continue
		}
		for _, attr := range block.Body.Attributes {
			if _, given := locals[attr.Name]; !given {
				pending = append(pending, attr.AsHCLAttribute())
			}
		}
	}
	// Locals refer to each other: evaluate those whose references are known, until none is left.
	for len(pending) > 0 {
		var next []*hcl.Attribute
		for _, attr := range pending {
			ready := true
			for _, traversal := range attr.Expr.Variables() {
				if traversal.RootName() == "local" {
					if _, ok := locals[traversal[1].(hcl.TraverseAttr).Name]; !ok {
						ready = false
					}
				}
			}
			if !ready {
				next = append(next, attr)
				continue
			}
			ctx := &hcl.EvalContext{
				Variables: map[string]cty.Value{"var": cty.ObjectVal(object), "local": cty.ObjectVal(locals)},
				Functions: functions,
			}
			value, diags := attr.Expr.Value(ctx)
			if diags.HasErrors() {
				t.Fatalf("local.%s: %s", attr.Name, diags.Error())
			}
			locals[attr.Name] = value
		}
		if len(next) == len(pending) {
			t.Fatalf("dashboard.tf: locals refer to unknown locals: %v", next[0].Name)
		}
		pending = next
	}
	return locals
}

// dashboardInputs watch one of everything.
var dashboardInputs = map[string]any{
	"queue_name": "jobs", "dlq_name": "jobs-dlq", "function_name": "jobs-consumer",
	"dashboard_function_names":    []string{"jobs-consumer", "jobs-replay"},
	"outbox_lag_metric_namespace": "sqsworker", "outbox_lag_metric_name": "outbox.lag",
}

const dashboardAlarmARN = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:jobs-dlq-messages-visible"

type dashboardWidget struct {
	Type       string `json:"type"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	Properties struct {
		Title   string  `json:"title"`
		Region  string  `json:"region"`
		Metrics [][]any `json:"metrics"`
		Alarms  []string
	} `json:"properties"`
}

// The dashboard body is valid JSON in the shape CloudWatch's dashboard body structure
// documents: metric widgets with a region and metrics arrays of [namespace, name,
// dimension, value, {options}], an alarm widget with the alarm ARNs, one widget group per
// watched thing, and nothing for what is not watched.
func TestDashboardBody(t *testing.T) {
	alarms := loadModule(t, "alarms")
	decode := func(values map[string]any, arns []string) []dashboardWidget {
		t.Helper()
		body := evalAlarmLocals(t, alarms, values, arns)["dashboard_body"].AsString()
		var out struct {
			Widgets []dashboardWidget `json:"widgets"`
		}
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("dashboard body is not JSON: %v\n%s", err, body)
		}
		return out.Widgets
	}
	if got := decode(nil, nil); len(got) != 0 {
		t.Errorf("nothing watched: %d widgets, want 0", len(got))
	}
	arn := dashboardAlarmARN
	widgets := decode(dashboardInputs, []string{arn})
	var titles []string
	for _, w := range widgets {
		titles = append(titles, w.Properties.Title)
		if w.Width < 1 || w.Width > 24 || w.Height < 1 {
			t.Errorf("%s: size %dx%d", w.Properties.Title, w.Width, w.Height)
		}
		switch w.Type {
		case "alarm":
			if !slices.Equal(w.Properties.Alarms, []string{arn}) {
				t.Errorf("alarm widget lists %v", w.Properties.Alarms)
			}
		case "metric":
			if w.Properties.Region != "us-east-1" || len(w.Properties.Metrics) == 0 {
				t.Errorf("%s: region %q, %d metrics", w.Properties.Title, w.Properties.Region, len(w.Properties.Metrics))
			}
			for _, row := range w.Properties.Metrics {
				if _, isExpression := row[0].(map[string]any); isExpression {
					continue
				}
				names := 0
				for _, cell := range row {
					if _, ok := cell.(string); ok {
						names++
					}
				}
				if names < 2 || names%2 != 0 {
					t.Errorf("%s: metric row %v is not namespace, name, then dimension pairs", w.Properties.Title, row)
				}
			}
		default:
			t.Errorf("widget type %q", w.Type)
		}
	}
	want := []string{"Alarms", "jobs: messages", "jobs: age of oldest message (s)", "jobs: throughput and failure rate",
		"jobs-dlq: dead-letter messages", "jobs-consumer: invocations", "jobs-replay: invocations", "outbox lag (s)"}
	if !slices.Equal(titles, want) {
		t.Errorf("widgets %q\nwant %q", titles, want)
	}
	outbox := widgets[len(widgets)-1].Properties.Metrics[0]
	if fmt.Sprint(outbox) != "[sqsworker outbox.lag]" {
		t.Errorf("outbox metric row = %v", outbox)
	}
}

// When terraform or tofu is installed, the real CLI evaluates dashboard.tf (with
// variables.tf and a stub for local.region and local.alarm_arns, so no provider is needed)
// to the same body as the offline evaluation above: jsonencode, the for expressions and the
// conditionals behave in Terraform as the tests assume.
func TestDashboardBodyAgreesWithTerraformCLI(t *testing.T) {
	binary := ""
	for _, name := range []string{"terraform", "tofu"} {
		if path, err := exec.LookPath(name); err == nil {
			binary = path
			break
		}
	}
	if binary == "" {
		t.Skip("neither terraform nor tofu is installed")
	}
	alarms := loadModule(t, "alarms")
	dir := t.TempDir()
	for _, name := range []string{"variables.tf", "dashboard.tf"} {
		src, err := os.ReadFile(filepath.Join(alarms.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stub := fmt.Sprintf(`locals {
  region     = "us-east-1"
  alarm_arns = [%q]
}

output "dashboard_body" {
  value = local.dashboard_body
}
`, dashboardAlarmARN)
	if err := os.WriteFile(filepath.Join(dir, "stub.tf"), []byte(stub), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE=/dev/null")
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if exit, ok := err.(*exec.ExitError); ok {
				stderr = string(exit.Stderr)
			}
			t.Fatalf("%s %v: %v\n%s%s", binary, args, err, out, stderr)
		}
		return out
	}
	args := []string{"plan", "-input=false", "-no-color", "-lock=false", "-out=plan.bin"}
	for name, value := range dashboardInputs {
		if list, ok := value.([]string); ok {
			encoded, _ := json.Marshal(list)
			value = string(encoded)
		}
		args = append(args, "-var", fmt.Sprintf("%s=%v", name, value))
	}
	run(args...)
	var plan struct {
		PlannedValues struct {
			Outputs map[string]struct {
				Value string `json:"value"`
			} `json:"outputs"`
		} `json:"planned_values"`
	}
	if err := json.Unmarshal(run("show", "-json", "plan.bin"), &plan); err != nil {
		t.Fatal(err)
	}
	var cli, offline any
	if err := json.Unmarshal([]byte(plan.PlannedValues.Outputs["dashboard_body"].Value), &cli); err != nil {
		t.Fatalf("%s: dashboard body is not JSON: %v", binary, err)
	}
	body := evalAlarmLocals(t, alarms, dashboardInputs, []string{dashboardAlarmARN})["dashboard_body"].AsString()
	if err := json.Unmarshal([]byte(body), &offline); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cli, offline) {
		t.Errorf("%s evaluates the dashboard body to\n%v\noffline:\n%v", binary, cli, offline)
	}
}
