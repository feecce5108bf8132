package terraform_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goDuration returns the value of the package-level constant name in the Go file path,
// written as time.Unit or N * time.Unit.
func goDuration(t *testing.T, path, name string) time.Duration {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	units := map[string]time.Duration{"Millisecond": time.Millisecond, "Second": time.Second, "Minute": time.Minute}
	unit := func(expr ast.Expr) (time.Duration, bool) {
		selector, ok := expr.(*ast.SelectorExpr)
		if !ok {
			return 0, false
		}
		if pkg, ok := selector.X.(*ast.Ident); !ok || pkg.Name != "time" {
			return 0, false
		}
		d, ok := units[selector.Sel.Name]
		return d, ok
	}
	for _, decl := range file.Decls {
		general, ok := decl.(*ast.GenDecl)
		if !ok || general.Tok != token.CONST {
			continue
		}
		for _, spec := range general.Specs {
			value := spec.(*ast.ValueSpec)
			for i, ident := range value.Names {
				if ident.Name != name || i >= len(value.Values) {
					continue
				}
				switch expr := value.Values[i].(type) {
				case *ast.SelectorExpr:
					if d, ok := unit(expr); ok {
						return d
					}
				case *ast.BinaryExpr:
					literal, okLiteral := expr.X.(*ast.BasicLit)
					d, okUnit := unit(expr.Y)
					if n, err := strconv.Atoi(literal.Value); okLiteral && okUnit && err == nil && expr.Op == token.MUL {
						return time.Duration(n) * d
					}
				}
				t.Fatalf("%s: const %s is not written as time.Unit or N * time.Unit; update this test", path, name)
			}
		}
	}
	t.Fatalf("%s: no const %s (renamed? the stop-timeout margin must follow it)", path, name)
	return 0
}

// TestStopTimeoutMarginMatchesThePoller: poller-service's stop_timeout_seconds validation
// asks for drain + N seconds; N must be what the poller spends after the drain deadline:
// the grace of cancelled handlers, the final delete flush, and 1 s of slack, which is
// also the margin the poller keeps below Config.StopTimeout (stopTimeoutMargin).
func TestStopTimeoutMarginMatchesThePoller(t *testing.T) {
	root := repoRoot(t)
	grace := goDuration(t, filepath.Join(root, "poller", "dispatcher.go"), "cancelGrace")
	flush := goDuration(t, filepath.Join(root, "poller", "acker.go"), "finalFlushTimeout")
	want := int((grace + flush + time.Second + time.Second - 1) / time.Second)

	text, err := os.ReadFile(filepath.Join(terraformDir(t), "modules", "poller-service", "variables.tf"))
	if err != nil {
		t.Fatal(err)
	}
	match := regexp.MustCompile(`condition\s*=.*var\.stop_timeout_seconds >= 5 \+ 1 : var\.stop_timeout_seconds >= var\.drain_timeout_seconds \+ (\d+)`).FindSubmatch(text)
	if match == nil {
		t.Fatal("poller-service/variables.tf: no validation stop_timeout_seconds >= drain_timeout_seconds + N (stop_timeout_seconds >= 5 + 1 when the drain is derived)")
	}
	if got, _ := strconv.Atoi(string(match[1])); got != want {
		t.Errorf("stop_timeout_seconds margin is %d s; the poller needs cancelGrace %s + finalFlushTimeout %s + 1 s = %d s", got, grace, flush, want)
	}
	// The worker derives its drain from SQSWORKER_STOP_TIMEOUT with the same margin.
	config, err := os.ReadFile(filepath.Join(root, "poller", "config.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`stopTimeoutMargin = cancelGrace \+ finalFlushTimeout \+ time\.Second`).Match(config) {
		t.Error("poller/config.go: stopTimeoutMargin is no longer cancelGrace + finalFlushTimeout + time.Second; update the module's validation and this test")
	}
}

// TestModulesSetOnlyRuntimeVariables: the generic modules set the runtime's own
// variables only; an application's settings (the webhook example's
// SQSWORKER_IDEMPOTENCY_TABLE) come from the caller's environment_variables, as the
// examples pass them.
func TestModulesSetOnlyRuntimeVariables(t *testing.T) {
	for _, name := range []string{"lambda-consumer", "poller-service"} {
		for _, file := range []string{"main.tf", "variables.tf"} {
			text, err := os.ReadFile(filepath.Join(terraformDir(t), "modules", name, file))
			if err != nil {
				t.Fatal(err)
			}
			if regexp.MustCompile(`SQSWORKER_IDEMPOTENCY_TABLE\s*=|variable "idempotency_table_name"`).Match(text) {
				t.Errorf("%s/%s sets the webhook example's SQSWORKER_IDEMPOTENCY_TABLE; pass it in environment_variables", name, file)
			}
		}
	}
	for _, name := range exampleNames {
		text, err := os.ReadFile(filepath.Join(terraformDir(t), "examples", name, "main.tf"))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`environment_variables = \{\s*SQSWORKER_IDEMPOTENCY_TABLE = module\.idempotency_table\.table_name`).Match(text) {
			t.Errorf("examples/%s/main.tf does not pass SQSWORKER_IDEMPOTENCY_TABLE through environment_variables", name)
		}
	}
}

// TestWorkerPolicyIsWrittenOnce: the worker's statements live in worker-permissions only;
// lambda-consumer and poller-service each call it with their own (validated) ARNs and
// attach its document, so a new runtime call changes one file.
func TestWorkerPolicyIsWrittenOnce(t *testing.T) {
	for _, name := range moduleNames {
		if name == "worker-permissions" || name == "eventbridge-schedules" || name == "task-token-state-machine" {
			// eventbridge-schedules' role is EventBridge Scheduler's, task-token-state-machine's
			// Step Functions': not a worker's, they only send.
			continue
		}
		for _, s := range policyStatements(t, loadModule(t, name)) {
			for _, action := range s.actions {
				if strings.HasPrefix(action, "sqs:") || strings.HasPrefix(action, "dynamodb:") || strings.HasPrefix(action, "kms:") {
					t.Errorf("%s: statement %s grants %s itself; the worker's permissions come from worker-permissions", name, s.sid, action)
				}
			}
		}
	}
	wantArgs := map[string]string{
		"queue_arn": "var.queue_arn", "dlq_arn": "var.dlq_arn",
		"idempotency_table_arn": "var.idempotency_table_arn", "kms_key_arns": "var.kms_key_arns",
	}
	for _, name := range []string{"lambda-consumer", "poller-service"} {
		module := loadModule(t, name)
		call := module.block(t, "module", "worker_permissions")
		if source := literalString(t, call.Body.Attributes["source"].Expr); source != "../worker-permissions" {
			t.Errorf("%s: module worker_permissions source = %q", name, source)
		}
		for arg, want := range wantArgs {
			attr, ok := call.Body.Attributes[arg]
			if !ok || module.text(attr.Expr.Range()) != want {
				t.Errorf("%s: module worker_permissions: %s should be %s", name, arg, want)
			}
		}
	}
	consumer := loadModule(t, "lambda-consumer")
	document := consumer.block(t, "data", "aws_iam_policy_document", "this")
	if attr, ok := document.Body.Attributes["source_policy_documents"]; !ok || consumer.text(attr.Expr.Range()) != "[module.worker_permissions[0].json]" {
		t.Errorf("lambda-consumer: the function's policy document does not merge module.worker_permissions[0].json")
	}
	poller := loadModule(t, "poller-service")
	policy := poller.block(t, "resource", "aws_iam_role_policy", "task")
	if got := poller.text(policy.Body.Attributes["policy"].Expr.Range()); got != "module.worker_permissions[0].json" {
		t.Errorf("poller-service: the task role's policy is %s, want module.worker_permissions[0].json", got)
	}
}

// TestPollerServicePassesTheStopTimeout (CASES.md N26): the stop budget is set in one
// place. The task definition's stopTimeout is stop_timeout_seconds, and the module passes
// the same value to the worker as SQSWORKER_STOP_TIMEOUT (a Go duration), the variable
// the worker package reads into poller.Config.StopTimeout; SQSWORKER_DRAIN_TIMEOUT is
// passed only when drain_timeout_seconds is set.
func TestPollerServicePassesTheStopTimeout(t *testing.T) {
	module := loadModule(t, "poller-service")
	environment := module.text(module.local(t, "environment").Range())
	for _, want := range []string{
		`SQSWORKER_STOP_TIMEOUT = "${var.stop_timeout_seconds}s"`,
		`var.drain_timeout_seconds == null ? {} : { SQSWORKER_DRAIN_TIMEOUT = "${var.drain_timeout_seconds}s" }`,
	} {
		if !strings.Contains(environment, want) {
			t.Errorf("poller-service: local.environment lacks %s:\n%s", want, environment)
		}
	}
	definition := module.text(module.local(t, "container_definition").Range())
	if !strings.Contains(definition, "stopTimeout = var.stop_timeout_seconds") {
		t.Errorf("poller-service: the container's stopTimeout is not var.stop_timeout_seconds:\n%s", definition)
	}
	source, err := os.ReadFile(filepath.Join(repoRoot(t), "poller", "environment.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`EnvStopTimeout\s*=\s*"SQSWORKER_STOP_TIMEOUT"`).Match(source) {
		t.Error(`poller/environment.go does not read SQSWORKER_STOP_TIMEOUT (EnvStopTimeout)`)
	}
}
