// Package terraform_test checks the Terraform modules under infra/terraform offline: no
// provider can be downloaded where the tests run, so instead of `terraform validate` the
// tests parse the configuration with HCL and evaluate the variable validations with cty,
// the same libraries Terraform uses.
//
// Run: go test -count=1 ./infra/terraform/...
// Rewrite the inputs/outputs tables of the module READMEs: go test ./infra/terraform/ -run TestReadmes -update
package terraform_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sqsworker/sqsworker/internal/testing/resourcesfile"
	"github.com/sqsworker/sqsworker/provision"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

var update = flag.Bool("update", false, "rewrite the generated inputs/outputs block of each module README")

// moduleNames are the modules under modules/, in the order the READMEs list them.
var moduleNames = []string{"worker-queue", "alarms", "idempotency-table", "worker-permissions", "lambda-consumer", "poller-service", "eventbridge-schedules", "payload-bucket", "task-token-state-machine"}

var exampleNames = []string{"complete", "lambda-only"}

const (
	queueARN = "arn:aws:sqs:us-east-1:123456789012:webhook-deliveries"
	dlqARN   = "arn:aws:sqs:us-east-1:123456789012:webhook-deliveries-dlq"
	tableARN = "arn:aws:dynamodb:us-east-1:123456789012:table/webhook-idempotency"
	keyARN   = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
)

// ---------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------

// repoRoot walks up from the test's directory to the directory holding the root module's
// go.mod (this test is a module of its own, infra/terraform/go.mod).
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.HasPrefix(string(data), "module github.com/sqsworker/sqsworker\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of module github.com/sqsworker/sqsworker above the test directory")
		}
		dir = parent
	}
}

func terraformDir(t testing.TB) string {
	return filepath.Join(repoRoot(t), "infra", "terraform")
}

type tfFile struct {
	path string
	src  []byte
	body *hclsyntax.Body
}

func parseFile(t testing.TB, path string) tfFile {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("parse %s: %s", path, diags.Error())
	}
	return tfFile{path: path, src: src, body: file.Body.(*hclsyntax.Body)}
}

// allTerraformFiles lists every .tf file under infra/terraform.
func allTerraformFiles(t testing.TB) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(terraformDir(t), func(path string, entry os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() && strings.HasPrefix(entry.Name(), ".terraform") {
			return filepath.SkipDir
		}
		if !entry.IsDir() && strings.HasSuffix(path, ".tf") {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no .tf files under infra/terraform")
	}
	return paths
}

type variable struct {
	name        string
	file        string
	hasType     bool
	typ         cty.Type
	typeSrc     string
	description string
	def         cty.Value // cty.NilVal when the variable is required
	defSrc      string
	validations []*validation
}

type validation struct {
	variable  string
	index     int
	condition hclsyntax.Expression
	message   hclsyntax.Expression
}

type output struct {
	name        string
	description string
}

// config is one directory of .tf files: a module or an example.
type config struct {
	name      string
	dir       string
	files     []tfFile
	variables []*variable
	outputs   []output
}

func loadConfig(t testing.TB, dir string) *config {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no .tf files in %s", dir)
	}
	sort.Strings(paths)
	c := &config{name: filepath.Base(dir), dir: dir}
	for _, path := range paths {
		file := parseFile(t, path)
		c.files = append(c.files, file)
		for _, block := range file.body.Blocks {
			switch block.Type {
			case "variable":
				c.variables = append(c.variables, parseVariable(t, file, block))
			case "output":
				out := output{name: block.Labels[0]}
				if attr, ok := block.Body.Attributes["description"]; ok {
					out.description = literalString(t, attr.Expr)
				}
				c.outputs = append(c.outputs, out)
			}
		}
	}
	return c
}

func loadModule(t testing.TB, name string) *config {
	return loadConfig(t, filepath.Join(terraformDir(t), "modules", name))
}

func parseVariable(t testing.TB, file tfFile, block *hclsyntax.Block) *variable {
	t.Helper()
	v := &variable{name: block.Labels[0], file: file.path, typ: cty.DynamicPseudoType, def: cty.NilVal}
	attrs := block.Body.Attributes
	if attr, ok := attrs["type"]; ok {
		typ, diags := typeexpr.TypeConstraint(attr.Expr)
		if diags.HasErrors() {
			t.Fatalf("%s: variable %q: type: %s", file.path, v.name, diags.Error())
		}
		v.hasType, v.typ = true, typ
		v.typeSrc = string(attr.Expr.Range().SliceBytes(file.src))
	}
	if attr, ok := attrs["description"]; ok {
		v.description = literalString(t, attr.Expr)
	}
	if attr, ok := attrs["default"]; ok {
		value, diags := attr.Expr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("%s: variable %q: default is not a constant: %s", file.path, v.name, diags.Error())
		}
		converted, err := convert.Convert(value, v.typ)
		if err != nil {
			t.Fatalf("%s: variable %q: default does not fit its type: %v", file.path, v.name, err)
		}
		v.def = converted
		v.defSrc = string(attr.Expr.Range().SliceBytes(file.src))
	}
	for i, inner := range block.Body.Blocks {
		if inner.Type != "validation" {
			continue
		}
		condition, okCondition := inner.Body.Attributes["condition"]
		message, okMessage := inner.Body.Attributes["error_message"]
		if !okCondition || !okMessage {
			t.Fatalf("%s: variable %q: validation block %d needs condition and error_message", file.path, v.name, i)
		}
		v.validations = append(v.validations, &validation{
			variable: v.name, index: len(v.validations), condition: condition.Expr, message: message.Expr,
		})
	}
	return v
}

// literalString evaluates a constant string expression (a description, a literal name).
func literalString(t testing.TB, expr hclsyntax.Expression) string {
	t.Helper()
	value, diags := expr.Value(nil)
	if diags.HasErrors() || !value.Type().Equals(cty.String) || value.IsNull() {
		t.Fatalf("%s: expected a literal string", expr.Range())
	}
	return value.AsString()
}

// literalStrings evaluates a constant list of strings (IAM actions, architectures).
func literalStrings(t testing.TB, expr hclsyntax.Expression) []string {
	t.Helper()
	value, diags := expr.Value(nil)
	if diags.HasErrors() || value.IsNull() || !value.CanIterateElements() {
		t.Fatalf("%s: expected a literal list of strings", expr.Range())
	}
	var out []string
	for it := value.ElementIterator(); it.Next(); {
		_, element := it.Element()
		if !element.Type().Equals(cty.String) {
			t.Fatalf("%s: expected a literal list of strings", expr.Range())
		}
		out = append(out, element.AsString())
	}
	return out
}

// blocks returns the blocks of the given type and first labels across the config's files.
func (c *config) blocks(blockType string, labels ...string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, file := range c.files {
		for _, block := range file.body.Blocks {
			if block.Type == blockType && len(block.Labels) >= len(labels) && slices.Equal(block.Labels[:len(labels)], labels) {
				out = append(out, block)
			}
		}
	}
	return out
}

func (c *config) block(t testing.TB, blockType string, labels ...string) *hclsyntax.Block {
	t.Helper()
	found := c.blocks(blockType, labels...)
	if len(found) != 1 {
		t.Fatalf("%s: want exactly one %s %q, found %d", c.name, blockType, labels, len(found))
	}
	return found[0]
}

// text returns the source of a range of one of the config's files, whitespace collapsed.
func (c *config) text(rng hcl.Range) string {
	for _, file := range c.files {
		if file.path == rng.Filename {
			return strings.Join(strings.Fields(string(rng.SliceBytes(file.src))), " ")
		}
	}
	return ""
}

func (c *config) local(t testing.TB, name string) hclsyntax.Expression {
	t.Helper()
	for _, block := range c.blocks("locals") {
		if attr, ok := block.Body.Attributes[name]; ok {
			return attr.Expr
		}
	}
	t.Fatalf("%s: no local %q", c.name, name)
	return nil
}

// ---------------------------------------------------------------------------------------
// Evaluating validations
// ---------------------------------------------------------------------------------------

// terraformFunctions are the Terraform functions the validations may call, each with
// Terraform's semantics. A condition calling anything else fails the tests ("Call to
// unknown function"), which keeps the conditions to functions checked here.
var terraformFunctions = map[string]function.Function{
	"alltrue":    allTrueFunc,
	"can":        tryfunc.CanFunc,
	"contains":   stdlib.ContainsFunc,
	"distinct":   stdlib.DistinctFunc,
	"floor":      stdlib.FloorFunc,
	"join":       stdlib.JoinFunc,
	"jsondecode": stdlib.JSONDecodeFunc,
	"jsonencode": stdlib.JSONEncodeFunc,
	"length":     lengthFunc,
	"merge":      stdlib.MergeFunc,
	"regex":      stdlib.RegexFunc,
	"startswith": startsWithFunc,
	"trimspace":  stdlib.TrimSpaceFunc,
	"try":        tryfunc.TryFunc,
}

// allTrueFunc is Terraform's alltrue: true when every element is true (and for an empty list).
var allTrueFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.List(cty.Bool)}},
	Type:   function.StaticReturnType(cty.Bool),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		for it := args[0].ElementIterator(); it.Next(); {
			_, element := it.Element()
			if element.IsNull() || element.False() {
				return cty.False, nil
			}
		}
		return cty.True, nil
	},
})

// lengthFunc is Terraform's length: characters of a string, elements of a collection.
var lengthFunc = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "value", Type: cty.DynamicPseudoType, AllowDynamicType: true}},
	Type:   function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		value := args[0]
		switch typ := value.Type(); {
		case typ.Equals(cty.String):
			return stdlib.Strlen(value)
		case typ.IsListType(), typ.IsSetType(), typ.IsMapType(), typ.IsTupleType():
			return value.Length(), nil
		}
		return cty.NilVal, errors.New("length: argument must be a string or a collection")
	},
})

func toCty(t testing.TB, name string, value any, typ cty.Type) cty.Value {
	t.Helper()
	var v cty.Value
	switch x := value.(type) {
	case nil:
		return cty.NullVal(typ)
	case int:
		v = cty.NumberIntVal(int64(x))
	case float64:
		v = cty.NumberFloatVal(x)
	case string:
		v = cty.StringVal(x)
	case bool:
		v = cty.BoolVal(x)
	case []string:
		if len(x) == 0 {
			v = cty.ListValEmpty(cty.String)
		} else {
			elements := make([]cty.Value, len(x))
			for i, s := range x {
				elements[i] = cty.StringVal(s)
			}
			v = cty.ListVal(elements)
		}
	default:
		t.Fatalf("variable %q: unsupported test value %T", name, value)
	}
	converted, err := convert.Convert(v, typ)
	if err != nil {
		t.Fatalf("variable %q: test value %v does not fit the variable's type: %v", name, value, err)
	}
	return converted
}

type failure struct {
	variable string
	index    int
	message  string
}

func (f failure) String() string { return fmt.Sprintf("%s[%d]: %s", f.variable, f.index, f.message) }

// validate evaluates every validation of the config the way Terraform does for the given
// input values (unset variables take their defaults) and returns the failed ones. Like
// Terraform, it evaluates every error_message, also for passing conditions, so a message
// that cannot be rendered (for example one interpolating a null) fails the test.
func (c *config) validate(t testing.TB, values map[string]any) []failure {
	t.Helper()
	object := map[string]cty.Value{}
	for _, v := range c.variables {
		if value, ok := values[v.name]; ok {
			object[v.name] = toCty(t, v.name, value, v.typ)
		} else if v.def != cty.NilVal {
			object[v.name] = v.def
		} else {
			t.Fatalf("%s: no value for required variable %q", c.name, v.name)
		}
	}
	for name := range values {
		if _, ok := object[name]; !ok {
			t.Fatalf("%s: test sets unknown variable %q", c.name, name)
		}
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"var": cty.ObjectVal(object)},
		Functions: terraformFunctions,
	}
	var failures []failure
	for _, v := range c.variables {
		for _, rule := range v.validations {
			result, diags := rule.condition.Value(ctx)
			if diags.HasErrors() {
				t.Fatalf("%s: variable %q validation %d: condition fails to evaluate: %s", c.name, v.name, rule.index, diags.Error())
			}
			result, err := convert.Convert(result, cty.Bool)
			if err != nil || result.IsNull() || !result.IsKnown() {
				t.Fatalf("%s: variable %q validation %d: condition is not a known bool: %#v", c.name, v.name, rule.index, result)
			}
			message, diags := rule.message.Value(ctx)
			if diags.HasErrors() {
				t.Fatalf("%s: variable %q validation %d: error_message fails to evaluate: %s", c.name, v.name, rule.index, diags.Error())
			}
			message, err = convert.Convert(message, cty.String)
			if err != nil || message.IsNull() {
				t.Fatalf("%s: variable %q validation %d: error_message is not a string", c.name, v.name, rule.index)
			}
			if result.False() {
				failures = append(failures, failure{variable: v.name, index: rule.index, message: message.AsString()})
			}
		}
	}
	return failures
}

// merged returns base with overrides applied, leaving both unchanged.
func merged[V any](base, overrides map[string]V) map[string]V {
	out := make(map[string]V, len(base)+len(overrides))
	maps.Copy(out, base)
	maps.Copy(out, overrides)
	return out
}

// ---------------------------------------------------------------------------------------
// Layout and formatting
// ---------------------------------------------------------------------------------------

// Every .tf file is in canonical form (what `terraform fmt` writes).
func TestTerraformFilesAreFormatted(t *testing.T) {
	for _, path := range allTerraformFiles(t) {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if formatted := hclwrite.Format(src); !bytes.Equal(formatted, src) {
			t.Errorf("%s is not formatted; run terraform fmt -recursive infra/terraform", path)
		}
		parseFile(t, path)
	}
}

// Each module has main.tf, variables.tf, outputs.tf, versions.tf and a README with
// terraform-docs markers; each example has the four .tf files.
func TestModulesFollowTheLayout(t *testing.T) {
	root := terraformDir(t)
	entries, err := os.ReadDir(filepath.Join(root, "modules"))
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, entry := range entries {
		if entry.IsDir() {
			found = append(found, entry.Name())
		}
	}
	if want := slices.Sorted(slices.Values(moduleNames)); !slices.Equal(found, want) {
		t.Errorf("modules: found %v, want %v (update moduleNames and the READMEs)", found, want)
	}
	check := func(dir string, files ...string) {
		for _, name := range files {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Errorf("%s: missing %s", dir, name)
			}
		}
	}
	for _, name := range moduleNames {
		dir := filepath.Join(root, "modules", name)
		check(dir, "main.tf", "variables.tf", "outputs.tf", "versions.tf", "README.md")
		readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
		if !bytes.Contains(readme, []byte(docsBegin)) || !bytes.Contains(readme, []byte(docsEnd)) {
			t.Errorf("%s/README.md: missing the terraform-docs markers", dir)
		}
	}
	for _, name := range exampleNames {
		check(filepath.Join(root, "examples", name), "main.tf", "variables.tf", "outputs.tf", "versions.tf")
	}
	check(root, "README.md")
}

// Every variable has a type and a description, and every output a description.
func TestVariablesHaveTypeAndDescription(t *testing.T) {
	var dirs []string
	for _, name := range moduleNames {
		dirs = append(dirs, filepath.Join(terraformDir(t), "modules", name))
	}
	for _, name := range exampleNames {
		dirs = append(dirs, filepath.Join(terraformDir(t), "examples", name))
	}
	for _, dir := range dirs {
		c := loadConfig(t, dir)
		for _, v := range c.variables {
			if !v.hasType {
				t.Errorf("%s: variable %q has no type", v.file, v.name)
			}
			if strings.TrimSpace(v.description) == "" {
				t.Errorf("%s: variable %q has no description", v.file, v.name)
			}
		}
		for _, out := range c.outputs {
			if strings.TrimSpace(out.description) == "" {
				t.Errorf("%s: output %q has no description", c.dir, out.name)
			}
		}
	}
}

// Cross-variable validations need Terraform >= 1.9 (OpenTofu >= 1.9). Every configuration
// accepts AWS provider 5.100 to 6.x (make tf-validate validates them against 5.100; provider
// 5.x refuses max_message_size above 262144, 6.8 and later accept up to 1 MiB).
func TestVersionsAllowTheValidations(t *testing.T) {
	for _, path := range allTerraformFiles(t) {
		if filepath.Base(path) != "versions.tf" {
			continue
		}
		file := parseFile(t, path)
		terraform := file.body.Blocks[0]
		if terraform.Type != "terraform" {
			t.Fatalf("%s: want a terraform block", path)
		}
		if got := literalString(t, terraform.Body.Attributes["required_version"].Expr); got != ">= 1.9" {
			t.Errorf("%s: required_version = %q, want \">= 1.9\"", path, got)
		}
		var aws cty.Value
		for _, block := range terraform.Body.Blocks {
			if block.Type == "required_providers" {
				aws, _ = block.Body.Attributes["aws"].Expr.Value(nil)
			}
		}
		if aws == cty.NilVal || aws.IsNull() {
			t.Fatalf("%s: no required_providers.aws", path)
		}
		source := aws.GetAttr("source").AsString()
		version := aws.GetAttr("version").AsString()
		if source != "hashicorp/aws" || version != ">= 5.100, < 7.0" {
			t.Errorf("%s: aws = %s %q, want hashicorp/aws \">= 5.100, < 7.0\"", path, source, version)
		}
	}
}

// ---------------------------------------------------------------------------------------
// Validations
// ---------------------------------------------------------------------------------------

// baseValues are valid inputs for each module's required variables (plus the ones the
// cases below vary around).
var baseValues = map[string]map[string]any{
	"worker-queue":      {"name": "webhook-deliveries"},
	"idempotency-table": {"name": "webhook-idempotency"},
	"lambda-consumer": {
		"function_name":                    "webhook-deliveries-consumer",
		"filename":                         "dist/bootstrap-arm64.zip",
		"queue_arn":                        queueARN,
		"dlq_arn":                          dlqARN,
		"timeout":                          5,
		"queue_visibility_timeout_seconds": 30,
		"max_receive_count":                5,
	},
	"worker-permissions": {"queue_arn": queueARN, "dlq_arn": dlqARN},
	"task-token-state-machine": {
		"name":              "orders-saga",
		"worker_queue_arns": []string{queueARN},
		"definition":        `{"StartAt":"Charge","States":{"Charge":{"Type":"Task","Resource":"arn:aws:states:::sqs:sendMessage.waitForTaskToken","End":true}}}`,
	},
	"poller-service": {
		"name":        "webhook-poller",
		"cluster_arn": "arn:aws:ecs:us-east-1:123456789012:cluster/webhook",
		"subnet_ids":  []string{"subnet-0123456789abcdef0"},
		"image":       "123456789012.dkr.ecr.us-east-1.amazonaws.com/webhook:1",
		"queue_url":   "https://sqs.us-east-1.amazonaws.com/123456789012/webhook-deliveries",
		"queue_arn":   queueARN,
		"dlq_arn":     dlqARN,
	},
}

type validationCase struct {
	name   string
	vars   map[string]any // on top of baseValues
	reject string         // the one variable whose validation must fail; "" when all pass
	want   []string       // substrings of its error message (the rule and the numbers)
}

var validationCases = map[string][]validationCase{
	"task-token-state-machine": {
		{name: "one queue", vars: map[string]any{}},
		{name: "long name", vars: map[string]any{"name": strings.Repeat("a", 65)}, reject: "name", want: []string{"1-64 characters"}},
		{name: "not json", vars: map[string]any{"definition": "StartAt: Job (arn:aws:states:::sqs:sendMessage.waitForTaskToken)"}, reject: "definition", want: []string{"must be JSON"}},
		{name: "no task-token job", vars: map[string]any{"definition": `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`}, reject: "definition", want: []string{"waitForTaskToken"}},
		{name: "wildcard queue", vars: map[string]any{"worker_queue_arns": []string{"arn:aws:sqs:*:*:*"}}, reject: "worker_queue_arns", want: []string{"without wildcards"}},
		{name: "kms alias", vars: map[string]any{"queue_kms_key_arns": []string{"arn:aws:kms:us-east-1:123456789012:alias/orders"}}, reject: "queue_kms_key_arns", want: []string{"without wildcards or aliases"}},
	},
	"worker-permissions": {
		{name: "queue and dlq", vars: map[string]any{}},
		{name: "table and key", vars: map[string]any{"idempotency_table_arn": tableARN, "kms_key_arns": []string{keyARN}}},
		{name: "wildcard queue", vars: map[string]any{"queue_arn": "arn:aws:sqs:us-east-1:123456789012:*"}, reject: "queue_arn", want: []string{"without wildcards"}},
		{name: "wildcard dlq", vars: map[string]any{"dlq_arn": "*"}, reject: "dlq_arn", want: []string{"without wildcards"}},
		{name: "wildcard table", vars: map[string]any{"idempotency_table_arn": "*"}, reject: "idempotency_table_arn", want: []string{"without wildcards"}},
		{name: "kms alias", vars: map[string]any{"kms_key_arns": []string{"arn:aws:kms:us-east-1:123456789012:alias/aws/sqs"}}, reject: "kms_key_arns", want: []string{"without wildcards or aliases"}},
	},
	"worker-queue": {
		{name: "defaults", vars: nil},
		{name: "name with a space", vars: map[string]any{"name": "webhook deliveries"}, reject: "name", want: []string{`"webhook deliveries"`, "1-80"}},
		{name: "fifo suffix on a standard queue", vars: map[string]any{"name": "jobs.fifo"}, reject: "name", want: []string{`"jobs.fifo"`, "fifo_queue is false"}},
		{name: "fifo queue", vars: map[string]any{"name": "jobs.fifo", "fifo_queue": true}},
		{name: "visibility above 12 h", vars: map[string]any{"visibility_timeout_seconds": 43201}, reject: "visibility_timeout_seconds", want: []string{"(43201)", "43200"}},
		{name: "retention below 60 s", vars: map[string]any{"message_retention_seconds": 59, "oldest_message_age_threshold_seconds": 30}, reject: "message_retention_seconds", want: []string{"(59)", "60 to 1209600"}},
		{name: "message size 1 KiB", vars: map[string]any{"max_message_size": 1024}},
		{name: "message size 1 MiB", vars: map[string]any{"max_message_size": 1048576}},
		{name: "message size below 1 KiB", vars: map[string]any{"max_message_size": 1023}, reject: "max_message_size", want: []string{"(1023)", "1024", "1048576"}},
		{name: "message size above 1 MiB", vars: map[string]any{"max_message_size": 1048577}, reject: "max_message_size", want: []string{"(1048577)", "1048576"}},
		{name: "long poll 0 s", vars: map[string]any{"receive_wait_time_seconds": 0}},
		{name: "long poll 20 s", vars: map[string]any{"receive_wait_time_seconds": 20}},
		{name: "long poll 21 s", vars: map[string]any{"receive_wait_time_seconds": 21}, reject: "receive_wait_time_seconds", want: []string{"(21)", "0 to 20"}},
		{name: "long poll negative", vars: map[string]any{"receive_wait_time_seconds": -1}, reject: "receive_wait_time_seconds", want: []string{"(-1)", "0 to 20"}},
		{name: "delay above 15 min", vars: map[string]any{"delay_seconds": 901}, reject: "delay_seconds", want: []string{"(901)", "900"}},
		{name: "kms key reuse below 60 s", vars: map[string]any{"kms_data_key_reuse_period_seconds": 59}, reject: "kms_data_key_reuse_period_seconds", want: []string{"(59)", "60"}},
		{name: "max receive count 3", vars: map[string]any{"max_receive_count": 3}},
		{name: "max receive count 2", vars: map[string]any{"max_receive_count": 2}, reject: "max_receive_count", want: []string{"(2)", "from 3"}},
		{name: "max receive count above 1000", vars: map[string]any{"max_receive_count": 1001}, reject: "max_receive_count", want: []string{"(1001)", "1000"}},
		{name: "dlq name", vars: map[string]any{"dlq_name": "webhook-deliveries-dlq"}},
		{name: "dlq name with a space", vars: map[string]any{"dlq_name": "webhook dlq"}, reject: "dlq_name", want: []string{`"webhook dlq"`}},
		{name: "standard dlq for a fifo queue", vars: map[string]any{"name": "jobs.fifo", "fifo_queue": true, "dlq_name": "jobs-dlq"}, reject: "dlq_name", want: []string{`"jobs-dlq"`, "fifo_queue is true (here true)"}},
		{name: "dlq retention one second longer", vars: map[string]any{"message_retention_seconds": 345600, "dlq_message_retention_seconds": 345601}},
		{name: "dlq retention equal to source", vars: map[string]any{"message_retention_seconds": 345600, "dlq_message_retention_seconds": 345600}, reject: "dlq_message_retention_seconds", want: []string{"dlq_message_retention_seconds (345600)", "message_retention_seconds (345600)", "greater than"}},
		{name: "dlq retention shorter than source", vars: map[string]any{"message_retention_seconds": 345600, "dlq_message_retention_seconds": 86400}, reject: "dlq_message_retention_seconds", want: []string{"(86400)", "(345600)"}},
		{name: "both retentions at 14 days", vars: map[string]any{"message_retention_seconds": 1209600, "dlq_message_retention_seconds": 1209600}, reject: "dlq_message_retention_seconds", want: []string{"(1209600)"}},
		{name: "dlq retention above 14 days", vars: map[string]any{"dlq_message_retention_seconds": 1209601}, reject: "dlq_message_retention_seconds", want: []string{"(1209601)", "1209600"}},
		{name: "dlq visibility above 12 h", vars: map[string]any{"dlq_visibility_timeout_seconds": 43201}, reject: "dlq_visibility_timeout_seconds", want: []string{"(43201)", "43200"}},
		{name: "dlq message size equal", vars: map[string]any{"dlq_max_message_size": 1048576}},
		{name: "dlq message size smaller than source", vars: map[string]any{"dlq_max_message_size": 2048}, reject: "dlq_max_message_size", want: []string{"(2048)", "(1048576)"}},
		{name: "dlq long poll 21 s", vars: map[string]any{"dlq_receive_wait_time_seconds": 21}, reject: "dlq_receive_wait_time_seconds", want: []string{"(21)", "0 to 20"}},
		{name: "age alarm at retention", vars: map[string]any{"oldest_message_age_threshold_seconds": 345600}, reject: "oldest_message_age_threshold_seconds", want: []string{"(345600)", "message_retention_seconds (345600)"}},
	},
	"idempotency-table": {
		{name: "defaults", vars: nil},
		{name: "short name", vars: map[string]any{"name": "ab"}, reject: "name", want: []string{`"ab"`, "3-255"}},
		{name: "empty key", vars: map[string]any{"hash_key": ""}, reject: "hash_key", want: []string{`""`, "1-255"}},
		{name: "ttl on the key", vars: map[string]any{"ttl_attribute_name": "id"}, reject: "ttl_attribute_name", want: []string{`ttl_attribute_name ("id")`, `hash_key ("id")`}},
	},
	"lambda-consumer": {
		{name: "local settings: 30 >= 6 x 5 + 0", vars: nil},
		{name: "C19: 730 accepted for 120 s and a 10 s window", vars: map[string]any{"timeout": 120, "maximum_batching_window_in_seconds": 10, "queue_visibility_timeout_seconds": 730}},
		{name: "C19: 729 rejected", vars: map[string]any{"timeout": 120, "maximum_batching_window_in_seconds": 10, "queue_visibility_timeout_seconds": 729}, reject: "queue_visibility_timeout_seconds", want: []string{"(729)", "6 x 120 + 10 = 730"}},
		{name: "C19: 60 rejected", vars: map[string]any{"timeout": 120, "maximum_batching_window_in_seconds": 10, "queue_visibility_timeout_seconds": 60}, reject: "queue_visibility_timeout_seconds", want: []string{"(60)", "6 x timeout + maximum_batching_window_in_seconds", "730"}},
		{name: "visibility 29 for a 5 s function", vars: map[string]any{"queue_visibility_timeout_seconds": 29}, reject: "queue_visibility_timeout_seconds", want: []string{"(29)", "6 x 5 + 0 = 30"}},
		{name: "visibility above 12 h", vars: map[string]any{"queue_visibility_timeout_seconds": 43201}, reject: "queue_visibility_timeout_seconds", want: []string{"(43201)", "43200"}},
		{name: "max receive count 5", vars: map[string]any{"max_receive_count": 5}},
		{name: "x86_64 accepted", vars: map[string]any{"architectures": []string{"x86_64"}}},
		{name: "amd64 is Go's name, not Lambda's", vars: map[string]any{"architectures": []string{"amd64"}}, reject: "architectures", want: []string{`["amd64"]`, "arm64", "x86_64"}},
		{name: "two architectures", vars: map[string]any{"architectures": []string{"arm64", "x86_64"}}, reject: "architectures", want: []string{"exactly one"}},
		{name: "max receive count 2", vars: map[string]any{"max_receive_count": 2}, reject: "max_receive_count", want: []string{"(2)", "at least 5 for a Lambda consumer"}},
		{name: "max receive count 4", vars: map[string]any{"max_receive_count": 4}, reject: "max_receive_count", want: []string{"(4)", "at least 5"}},
		{name: "N25: a queue without a redrive policy", vars: map[string]any{"max_receive_count": nil, "dlq_arn": nil}, reject: "max_receive_count",
			want: []string{"partial batch responses need a redrive policy on the queue", "max_receive_count null, dlq_arn null", "Lambda does not scale down on failures", "retry until the queue's retention"}},
		{name: "a redrive policy without its dead-letter queue", vars: map[string]any{"dlq_arn": nil}, reject: "max_receive_count", want: []string{"max_receive_count 5, dlq_arn null"}},
		{name: "reserved concurrency 1", vars: map[string]any{"reserved_concurrent_executions": 1}, reject: "reserved_concurrent_executions", want: []string{"(1)", "below 5", "maximum_concurrency (2-1000)"}},
		{name: "reserved concurrency 0", vars: map[string]any{"reserved_concurrent_executions": 0}, reject: "reserved_concurrent_executions", want: []string{"(0)", "maximum_concurrency"}},
		{name: "reserved concurrency 4", vars: map[string]any{"reserved_concurrent_executions": 4}, reject: "reserved_concurrent_executions", want: []string{"(4)", "maximum_concurrency"}},
		{name: "reserved concurrency 5", vars: map[string]any{"reserved_concurrent_executions": 5}},
		{name: "reserved concurrency -1", vars: map[string]any{"reserved_concurrent_executions": -1}},
		{name: "reserved below maximum concurrency", vars: map[string]any{"reserved_concurrent_executions": 5, "maximum_concurrency": 10}, reject: "reserved_concurrent_executions", want: []string{"(5)", "maximum_concurrency (10)"}},
		{name: "reserved equal to maximum concurrency", vars: map[string]any{"reserved_concurrent_executions": 10, "maximum_concurrency": 10}},
		{name: "maximum concurrency 2", vars: map[string]any{"maximum_concurrency": 2}},
		{name: "maximum concurrency 1000", vars: map[string]any{"maximum_concurrency": 1000}},
		{name: "maximum concurrency 1", vars: map[string]any{"maximum_concurrency": 1}, reject: "maximum_concurrency", want: []string{"(1)", "2 to 1000"}},
		{name: "maximum concurrency 1001", vars: map[string]any{"maximum_concurrency": 1001}, reject: "maximum_concurrency", want: []string{"(1001)", "2 to 1000"}},
		{name: "maximum concurrency 2.5", vars: map[string]any{"maximum_concurrency": 2.5}, reject: "maximum_concurrency", want: []string{"(2.5)", "whole number"}},
		// Provisioned mode (provisioned_poller_config): AWS's SQS ranges, and never with maximum_concurrency.
		{name: "provisioned mode 2 to 10000", vars: map[string]any{"minimum_pollers": 2, "maximum_pollers": 10000}},
		{name: "provisioned mode 200 to 200", vars: map[string]any{"minimum_pollers": 200, "maximum_pollers": 200}},
		{name: "provisioned mode, minimum only", vars: map[string]any{"minimum_pollers": 5}},
		{name: "provisioned mode, maximum only", vars: map[string]any{"maximum_pollers": 2}},
		{name: "minimum pollers 1", vars: map[string]any{"minimum_pollers": 1}, reject: "minimum_pollers", want: []string{"(1)", "2 to 200", "SQS"}},
		{name: "minimum pollers 201", vars: map[string]any{"minimum_pollers": 201}, reject: "minimum_pollers", want: []string{"(201)", "2 to 200"}},
		{name: "minimum pollers 2.5", vars: map[string]any{"minimum_pollers": 2.5}, reject: "minimum_pollers", want: []string{"(2.5)", "whole number"}},
		{name: "maximum pollers 1", vars: map[string]any{"maximum_pollers": 1}, reject: "maximum_pollers", want: []string{"(1)", "2 to 10000", "SQS"}},
		{name: "maximum pollers 10001", vars: map[string]any{"maximum_pollers": 10001}, reject: "maximum_pollers", want: []string{"(10001)", "2 to 10000"}},
		{name: "maximum pollers below minimum", vars: map[string]any{"minimum_pollers": 10, "maximum_pollers": 5}, reject: "maximum_pollers", want: []string{"maximum_pollers (5)", "minimum_pollers (10)"}},
		{name: "maximum concurrency with provisioned mode", vars: map[string]any{"maximum_concurrency": 5, "minimum_pollers": 2, "maximum_pollers": 10}, reject: "maximum_concurrency", want: []string{"maximum_concurrency (5)", "minimum_pollers 2, maximum_pollers 10", "does not allow", "maximum_pollers"}},
		{name: "maximum concurrency with a minimum of pollers only", vars: map[string]any{"maximum_concurrency": 5, "minimum_pollers": 2}, reject: "maximum_concurrency", want: []string{"maximum_concurrency (5)", "minimum_pollers 2, maximum_pollers null"}},
		{name: "maximum concurrency with a maximum of pollers only", vars: map[string]any{"maximum_concurrency": 5, "maximum_pollers": 20}, reject: "maximum_concurrency", want: []string{"minimum_pollers null, maximum_pollers 20"}},
		// The mapping's metrics (metrics_config).
		{name: "event count metrics", vars: map[string]any{"event_source_mapping_metrics": []string{"EventCount"}}},
		{name: "no mapping metrics", vars: map[string]any{"event_source_mapping_metrics": []string{}}},
		{name: "kafka metrics on an sqs mapping", vars: map[string]any{"event_source_mapping_metrics": []string{"EventCount", "KafkaMetrics"}}, reject: "event_source_mapping_metrics", want: []string{"(EventCount, KafkaMetrics)", "only \"EventCount\""}},
		{name: "event count twice", vars: map[string]any{"event_source_mapping_metrics": []string{"EventCount", "EventCount"}}, reject: "event_source_mapping_metrics", want: []string{"(EventCount, EventCount)", "once"}},
		{name: "batch 10 without window", vars: map[string]any{"batch_size": 10}},
		{name: "batch 11 without window", vars: map[string]any{"batch_size": 11}, reject: "batch_size", want: []string{"(11)", "from 1 to 10:", "(here 0)"}},
		{name: "batch 0", vars: map[string]any{"batch_size": 0}, reject: "batch_size", want: []string{"(0)", "from 1 to 10"}},
		{name: "batch 10000 with a 1 s window", vars: map[string]any{"batch_size": 10000, "maximum_batching_window_in_seconds": 1, "queue_visibility_timeout_seconds": 31}},
		{name: "batch 10001 with a 1 s window", vars: map[string]any{"batch_size": 10001, "maximum_batching_window_in_seconds": 1, "queue_visibility_timeout_seconds": 31}, reject: "batch_size", want: []string{"(10001)", "from 1 to 10000"}},
		{name: "batch 11 on a fifo queue", vars: map[string]any{"batch_size": 11, "fifo_queue": true}, reject: "batch_size", want: []string{"(11)", "from 1 to 10:", "FIFO (here true)"}},
		{name: "window 300 s", vars: map[string]any{"maximum_batching_window_in_seconds": 300, "queue_visibility_timeout_seconds": 330}},
		{name: "window 301 s", vars: map[string]any{"maximum_batching_window_in_seconds": 301, "queue_visibility_timeout_seconds": 400}, reject: "maximum_batching_window_in_seconds", want: []string{"(301)", "from 0 to 300"}},
		{name: "window on a fifo queue", vars: map[string]any{"maximum_batching_window_in_seconds": 1, "fifo_queue": true, "queue_visibility_timeout_seconds": 31}, reject: "maximum_batching_window_in_seconds", want: []string{"(1)", "from 0 to 0", "fifo_queue = true"}},
		{name: "timeout 0", vars: map[string]any{"timeout": 0}, reject: "timeout", want: []string{"(0)", "1 to 900"}},
		{name: "timeout 901", vars: map[string]any{"timeout": 901, "queue_visibility_timeout_seconds": 43200}, reject: "timeout", want: []string{"(901)", "1 to 900"}},
		{name: "timeout 2.5", vars: map[string]any{"timeout": 2.5}, reject: "timeout", want: []string{"(2.5)", "whole number"}},
		{name: "memory 127", vars: map[string]any{"memory_size": 127}, reject: "memory_size", want: []string{"(127)", "128 to 10240"}},
		{name: "function name with a space", vars: map[string]any{"function_name": "webhook consumer"}, reject: "function_name", want: []string{`"webhook consumer"`}},
		{name: "package that is not a zip", vars: map[string]any{"filename": "dist/bootstrap"}, reject: "filename", want: []string{`"dist/bootstrap"`, "make lambda"}},
		{name: "log retention 0 (forever)", vars: map[string]any{"log_retention_in_days": 0}, reject: "log_retention_in_days", want: []string{"(0)"}},
		{name: "wildcard queue", vars: map[string]any{"queue_arn": "arn:aws:sqs:us-east-1:123456789012:*"}, reject: "queue_arn", want: []string{"without wildcards"}},
		{name: "wildcard dlq", vars: map[string]any{"dlq_arn": "*"}, reject: "dlq_arn", want: []string{`("*")`}},
		{name: "table", vars: map[string]any{"idempotency_table_arn": tableARN}},
		{name: "wildcard table", vars: map[string]any{"idempotency_table_arn": "arn:aws:dynamodb:us-east-1:123456789012:table/*"}, reject: "idempotency_table_arn", want: []string{"table/*", "without wildcards"}},
		{name: "kms key", vars: map[string]any{"kms_key_arns": []string{keyARN}}},
		{name: "kms alias", vars: map[string]any{"kms_key_arns": []string{"arn:aws:kms:us-east-1:123456789012:alias/aws/sqs"}}, reject: "kms_key_arns", want: []string{"alias/aws/sqs", "without wildcards or aliases"}},
	},
	"poller-service": {
		{name: "defaults: stop 30, drain derived (25)", vars: nil},
		{name: "stop the margin after drain", vars: map[string]any{"drain_timeout_seconds": 25, "stop_timeout_seconds": 30}},
		{name: "N26: stop 150 on Fargate", vars: map[string]any{"stop_timeout_seconds": 150}, reject: "stop_timeout_seconds", want: []string{"(150)", "Fargate allows at most 120s"}},
		{name: "N26: drain 60 under stop 30", vars: map[string]any{"drain_timeout_seconds": 60, "stop_timeout_seconds": 30}, reject: "stop_timeout_seconds", want: []string{"(30)", "drain_timeout_seconds (60) + 5"}},
		{name: "stop 120 with the drain derived", vars: map[string]any{"stop_timeout_seconds": 120}},
		{name: "stop 5 with the drain derived", vars: map[string]any{"stop_timeout_seconds": 5}, reject: "stop_timeout_seconds", want: []string{"(5)", "at least 6 (1 s of drain + 5)"}},
		{name: "stop 30.5", vars: map[string]any{"stop_timeout_seconds": 30.5}, reject: "stop_timeout_seconds", want: []string{"(30.5)", "whole number"}},
		{name: "stop one second after drain", vars: map[string]any{"drain_timeout_seconds": 25, "stop_timeout_seconds": 26}, reject: "stop_timeout_seconds", want: []string{"stop_timeout_seconds (26)", "drain_timeout_seconds (25) + 5", "final delete flush"}},
		{name: "stop one second short of the margin", vars: map[string]any{"drain_timeout_seconds": 26, "stop_timeout_seconds": 30}, reject: "stop_timeout_seconds", want: []string{"(30)", "(26) + 5"}},
		{name: "stop equal to drain", vars: map[string]any{"drain_timeout_seconds": 25, "stop_timeout_seconds": 25}, reject: "stop_timeout_seconds", want: []string{"stop_timeout_seconds (25)", "drain_timeout_seconds (25)", "at least"}},
		{name: "stop before drain", vars: map[string]any{"drain_timeout_seconds": 60, "stop_timeout_seconds": 30}, reject: "stop_timeout_seconds", want: []string{"(30)", "(60)"}},
		{name: "stop above fargate's 120 s", vars: map[string]any{"stop_timeout_seconds": 121}, reject: "stop_timeout_seconds", want: []string{"(121)", "at most 120"}},
		{name: "drain 0", vars: map[string]any{"drain_timeout_seconds": 0}, reject: "drain_timeout_seconds", want: []string{"(0)", "1 to 115"}},
		{name: "min tasks 0", vars: map[string]any{"min_tasks": 0}, reject: "min_tasks", want: []string{"(0)", "RunningTaskCount"}},
		{name: "max below min", vars: map[string]any{"min_tasks": 3, "max_tasks": 2}, reject: "max_tasks", want: []string{"max_tasks (2)", "min_tasks (3)"}},
		{name: "target backlog 0", vars: map[string]any{"target_backlog_per_task": 0}, reject: "target_backlog_per_task", want: []string{"(0)"}},
		{name: "cpu 300", vars: map[string]any{"cpu": 300}, reject: "cpu", want: []string{"(300)", "256"}},
		{name: "memory 256", vars: map[string]any{"memory": 256}, reject: "memory", want: []string{"(256)", "512"}},
		{name: "lowercase architecture", vars: map[string]any{"cpu_architecture": "arm64"}, reject: "cpu_architecture", want: []string{`"arm64"`, "ARM64"}},
		{name: "long name", vars: map[string]any{"name": strings.Repeat("w", 49)}, reject: "name", want: []string{"1-48"}},
		{name: "cluster name instead of ARN", vars: map[string]any{"cluster_arn": "webhook"}, reject: "cluster_arn", want: []string{`"webhook"`}},
		{name: "no subnets", vars: map[string]any{"subnet_ids": []string{}}, reject: "subnet_ids", want: []string{"got 0"}},
		{name: "ecr repository", vars: map[string]any{"ecr_repository_arn": "arn:aws:ecr:us-east-1:123456789012:repository/webhook"}},
		{name: "wildcard ecr repository", vars: map[string]any{"ecr_repository_arn": "arn:aws:ecr:us-east-1:123456789012:repository/*"}, reject: "ecr_repository_arn", want: []string{"without wildcards"}},
		{name: "log retention 2", vars: map[string]any{"log_retention_in_days": 2}, reject: "log_retention_in_days", want: []string{"(2)"}},
		{name: "wildcard queue", vars: map[string]any{"queue_arn": "*"}, reject: "queue_arn", want: []string{`("*")`}},
		{name: "wildcard dlq", vars: map[string]any{"dlq_arn": "arn:aws:sqs:*:*:*"}, reject: "dlq_arn", want: []string{"without wildcards"}},
		{name: "table", vars: map[string]any{"idempotency_table_arn": tableARN}},
		{name: "wildcard table", vars: map[string]any{"idempotency_table_arn": "*"}, reject: "idempotency_table_arn", want: []string{"without wildcards"}},
		{name: "wildcard kms key", vars: map[string]any{"kms_key_arns": []string{"*"}}, reject: "kms_key_arns", want: []string{"(*)"}},
	},
}

// Each validation exists on the variable it belongs to, accepts the good values, rejects
// the bad ones with a message naming the rule and the offending numbers, and every
// validation block of every module is exercised by at least one rejecting case.
func TestValidations(t *testing.T) {
	for _, moduleName := range moduleNames {
		module := loadModule(t, moduleName)
		rejected := map[string]bool{}
		for _, tc := range validationCases[moduleName] {
			t.Run(moduleName+"/"+tc.name, func(t *testing.T) {
				failures := module.validate(t, merged(baseValues[moduleName], tc.vars))
				if tc.reject == "" {
					if len(failures) > 0 {
						t.Fatalf("want accepted, got %v", failures)
					}
					return
				}
				if len(failures) != 1 || failures[0].variable != tc.reject {
					t.Fatalf("want exactly one failure on %s, got %v", tc.reject, failures)
				}
				for _, want := range tc.want {
					if !strings.Contains(failures[0].message, want) {
						t.Errorf("message %q does not contain %q", failures[0].message, want)
					}
				}
				rejected[fmt.Sprintf("%s[%d]", failures[0].variable, failures[0].index)] = true
			})
		}
		for _, v := range module.variables {
			for _, rule := range v.validations {
				if key := fmt.Sprintf("%s[%d]", v.name, rule.index); !rejected[key] {
					t.Errorf("%s: validation %s is never rejected by a test case", moduleName, key)
				}
			}
		}
	}
}

// CASES.md C19: function timeout 120 s, queue visibility 60 s, maxReceiveCount 2, reserved
// concurrency 1, batching window 10 s fail with exactly three named errors; the corrected
// settings pass.
func TestLambdaInputsFailWithThreeNamedErrors(t *testing.T) {
	module := loadModule(t, "lambda-consumer")
	failures := module.validate(t, merged(baseValues["lambda-consumer"], map[string]any{
		"timeout":                            120,
		"queue_visibility_timeout_seconds":   60,
		"max_receive_count":                  2,
		"reserved_concurrent_executions":     1,
		"maximum_batching_window_in_seconds": 10,
	}))
	want := map[string][]string{
		"queue_visibility_timeout_seconds": {"(60)", "6 x 120 + 10 = 730"},
		"max_receive_count":                {"(2)", "at least 5 for a Lambda consumer"},
		"reserved_concurrent_executions":   {"(1)", "below 5", "maximum_concurrency"},
	}
	if len(failures) != len(want) {
		t.Fatalf("want %d errors, got %d: %v", len(want), len(failures), failures)
	}
	for _, f := range failures {
		substrings, ok := want[f.variable]
		if !ok {
			t.Errorf("unexpected error on %s: %s", f.variable, f.message)
			continue
		}
		for _, s := range substrings {
			if !strings.Contains(f.message, s) {
				t.Errorf("%s: message %q does not contain %q", f.variable, f.message, s)
			}
		}
	}

	corrected := module.validate(t, merged(baseValues["lambda-consumer"], map[string]any{
		"timeout":                            120,
		"queue_visibility_timeout_seconds":   730,
		"max_receive_count":                  5,
		"maximum_concurrency":                2,
		"maximum_batching_window_in_seconds": 10,
	}))
	if len(corrected) > 0 {
		t.Errorf("corrected settings rejected: %v", corrected)
	}
}

// When terraform or tofu is installed, the real CLI must agree with the evaluation above.
// `plan` of a copy of a module's variables.tf (no providers, so nothing is downloaded)
// accepts the base inputs of every module (so every condition and error_message also
// evaluates in the real CLI, nulls included), rejects the C19 inputs with the same three
// messages, and rejects a cross-variable case in each of the other modules.
func TestValidationsAgreeWithTerraformCLI(t *testing.T) {
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
	c19 := map[string]any{
		"timeout": 120, "queue_visibility_timeout_seconds": 60, "max_receive_count": 2,
		"reserved_concurrent_executions": 1, "maximum_batching_window_in_seconds": 10,
	}
	corrected := map[string]any{
		"timeout": 120, "queue_visibility_timeout_seconds": 730, "max_receive_count": 5,
		"maximum_concurrency": 2, "maximum_batching_window_in_seconds": 10,
	}
	cases := []struct {
		module string
		vars   map[string]any
		want   []string // substrings of the output; empty when the plan must succeed
		errors int
	}{
		{module: "worker-queue"},
		{module: "alarms"},
		{module: "alarms", vars: map[string]any{"create_dashboard": true}, errors: 1, want: []string{
			"dashboard_name (null) must be set when create_dashboard is true",
		}},
		{module: "idempotency-table"},
		{module: "lambda-consumer"},
		{module: "poller-service"},
		{module: "eventbridge-schedules"},
		{module: "eventbridge-schedules", vars: map[string]any{"schedules_json": badCronSchedules}, errors: 1, want: []string{
			"EventBridge Scheduler cannot run these cron expressions as written: seconds (\"*/10 * * * * *\"), numeric-days (\"0 9 * * 1-5\")",
		}},
		{module: "lambda-consumer", vars: c19, errors: 3, want: []string{
			"6 x 120 + 10 = 730", "max_receive_count (2) must be at least 5", "reserved_concurrent_executions (1) is below 5", "maximum_concurrency (2-1000)",
		}},
		{module: "lambda-consumer", vars: corrected},
		{module: "lambda-consumer", vars: map[string]any{"maximum_concurrency": 5, "minimum_pollers": 2, "maximum_pollers": 10}, errors: 1, want: []string{
			"maximum_concurrency (5) cannot be set together with provisioned mode (minimum_pollers 2, maximum_pollers 10)",
		}},
		{module: "lambda-consumer", vars: map[string]any{"minimum_pollers": 2, "maximum_pollers": 10}},
		{module: "lambda-consumer", vars: map[string]any{"max_receive_count": nil, "dlq_arn": nil}, errors: 1, want: []string{
			"partial batch responses need a redrive policy on the queue (max_receive_count null, dlq_arn null)",
		}},
		{module: "worker-queue", vars: map[string]any{"dlq_message_retention_seconds": 345600}, errors: 1, want: []string{
			"dlq_message_retention_seconds (345600) must be greater than message_retention_seconds (345600)",
		}},
		{module: "poller-service", vars: map[string]any{"stop_timeout_seconds": 25, "drain_timeout_seconds": 25}, errors: 1, want: []string{
			"stop_timeout_seconds (25) must be at least drain_timeout_seconds (25) + 5",
		}},
		{module: "poller-service", vars: map[string]any{"stop_timeout_seconds": 150}, errors: 1, want: []string{
			"stop_timeout_seconds (150) must be a whole number of seconds, and Fargate allows at most 120s",
		}},
	}
	for _, tc := range cases {
		src, err := os.ReadFile(filepath.Join(terraformDir(t), "modules", tc.module, "variables.tf"))
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "variables.tf"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"plan", "-input=false", "-no-color", "-lock=false"}
		// A variable file, not -var flags: JSON can say null (a queue without a redrive
		// policy), which -var cannot for a string variable.
		values, err := json.Marshal(merged(baseValues[tc.module], tc.vars))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "terraform.tfvars.json"), values, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(binary, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_CLI_CONFIG_FILE=/dev/null")
		raw, err := cmd.CombinedOutput()
		// The CLI wraps messages at 80 columns; join the lines before matching.
		out := strings.Join(strings.Fields(string(raw)), " ")
		if tc.errors == 0 {
			if err != nil {
				t.Errorf("%s %s: plan rejected %v: %v\n%s", binary, tc.module, tc.vars, err, out)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s %s: plan accepted %v", binary, tc.module, tc.vars)
			continue
		}
		if got := strings.Count(out, "Invalid value for variable"); got != tc.errors {
			t.Errorf("%s %s: %d invalid variables, want %d:\n%s", binary, tc.module, got, tc.errors, out)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("%s %s: output lacks %q:\n%s", binary, tc.module, want, out)
			}
		}
	}
}

// ---------------------------------------------------------------------------------------
// Hard-wired guidance
// ---------------------------------------------------------------------------------------

// resourceAttr returns the expression of an attribute of a resource, descending into
// nested blocks: resourceAttr(t, c, "aws_lambda_function", "this", "logging_config", "log_format").
func resourceAttr(t testing.TB, c *config, resourceType, name string, path ...string) hclsyntax.Expression {
	t.Helper()
	body := c.block(t, "resource", resourceType, name).Body
	for _, blockType := range path[:len(path)-1] {
		var next *hclsyntax.Body
		for _, block := range body.Blocks {
			if block.Type == blockType {
				next = block.Body
			}
		}
		if next == nil {
			t.Fatalf("%s: %s.%s has no %s block", c.name, resourceType, name, blockType)
		}
		body = next
	}
	attr, ok := body.Attributes[path[len(path)-1]]
	if !ok {
		t.Fatalf("%s: %s.%s has no %s", c.name, resourceType, name, strings.Join(path, "."))
	}
	return attr.Expr
}

func constant(t testing.TB, expr hclsyntax.Expression, ctx *hcl.EvalContext) cty.Value {
	t.Helper()
	value, diags := expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", expr.Range(), diags.Error())
	}
	return value
}

func TestGuidanceIsHardWired(t *testing.T) {
	str := cty.StringVal
	checks := []struct {
		module, resourceType, name string
		path                       []string
		want                       cty.Value
	}{
		// The Lambda function runs the zip from `make lambda`.
		{"lambda-consumer", "aws_lambda_function", "this", []string{"runtime"}, str("provided.al2023")},
		{"lambda-consumer", "aws_lambda_function", "this", []string{"handler"}, str("bootstrap")},
		// (architectures is the variable of that name, arm64 by default: its tests/*.tftest.hcl.)
		{"lambda-consumer", "aws_lambda_function", "this", []string{"logging_config", "log_format"}, str("JSON")},
		// On-demand table, string key, TTL on, encryption on.
		{"idempotency-table", "aws_dynamodb_table", "this", []string{"billing_mode"}, str("PAY_PER_REQUEST")},
		{"idempotency-table", "aws_dynamodb_table", "this", []string{"attribute", "type"}, str("S")},
		{"idempotency-table", "aws_dynamodb_table", "this", []string{"ttl", "enabled"}, cty.True},
		{"idempotency-table", "aws_dynamodb_table", "this", []string{"server_side_encryption", "enabled"}, cty.True},
		// Fargate tasks in awsvpc mode.
		{"poller-service", "aws_ecs_service", "this", []string{"launch_type"}, str("FARGATE")},
		{"poller-service", "aws_ecs_task_definition", "this", []string{"network_mode"}, str("awsvpc")},
		{"poller-service", "aws_ecs_service", "this", []string{"deployment_circuit_breaker", "rollback"}, cty.True},
		{"poller-service", "aws_appautoscaling_policy", "backlog_per_task", []string{"policy_type"}, str("TargetTrackingScaling")},
	}
	modules := map[string]*config{}
	for _, name := range moduleNames {
		modules[name] = loadModule(t, name)
	}
	for _, check := range checks {
		got := constant(t, resourceAttr(t, modules[check.module], check.resourceType, check.name, check.path...), nil)
		if !got.RawEquals(check.want) {
			t.Errorf("%s: %s.%s.%s = %#v, want %#v", check.module, check.resourceType, check.name, strings.Join(check.path, "."), got, check.want)
		}
	}

	t.Run("ReportBatchItemFailures always", func(t *testing.T) {
		// Every event source mapping anywhere sets it literally, and no module lets callers
		// turn it off.
		var mappings int
		for _, path := range allTerraformFiles(t) {
			file := parseFile(t, path)
			for _, block := range file.body.Blocks {
				if block.Type != "resource" || block.Labels[0] != "aws_lambda_event_source_mapping" {
					continue
				}
				mappings++
				attr, ok := block.Body.Attributes["function_response_types"]
				if !ok {
					t.Errorf("%s: %s has no function_response_types", path, block.Labels[1])
					continue
				}
				if got := literalStrings(t, attr.Expr); !slices.Equal(got, []string{"ReportBatchItemFailures"}) {
					t.Errorf("%s: function_response_types = %v, want [ReportBatchItemFailures]", path, got)
				}
			}
			for _, block := range file.body.Blocks {
				if block.Type == "variable" && strings.Contains(block.Labels[0], "response_types") {
					t.Errorf("%s: variable %q would let callers drop ReportBatchItemFailures", path, block.Labels[0])
				}
			}
		}
		if mappings == 0 {
			t.Error("no aws_lambda_event_source_mapping found")
		}
	})

	t.Run("queue encryption, redrive and redrive allow policy", func(t *testing.T) {
		queue := modules["worker-queue"]
		ctx := &hcl.EvalContext{
			Variables: map[string]cty.Value{
				"var": cty.ObjectVal(map[string]cty.Value{
					"max_receive_count": cty.NumberIntVal(5),
					"kms_master_key_id": cty.NullVal(cty.String),
				}),
				"aws_sqs_queue": cty.ObjectVal(map[string]cty.Value{
					"this": cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"arn": str(queueARN), "id": str("q")})}),
					"dlq":  cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"arn": str(dlqARN), "id": str("d")})}),
				}),
				"local": cty.ObjectVal(map[string]cty.Value{"dlq_kms_master_key_id": cty.NullVal(cty.String)}),
			},
			Functions: map[string]function.Function{"jsonencode": stdlib.JSONEncodeFunc},
		}
		decode := func(expr hclsyntax.Expression) map[string]any {
			var out map[string]any
			if err := json.Unmarshal([]byte(constant(t, expr, ctx).AsString()), &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
		redrive := decode(resourceAttr(t, queue, "aws_sqs_queue_redrive_policy", "this", "redrive_policy"))
		if redrive["deadLetterTargetArn"] != dlqARN || redrive["maxReceiveCount"] != 5.0 {
			t.Errorf("redrive policy = %v", redrive)
		}
		allow := decode(resourceAttr(t, queue, "aws_sqs_queue_redrive_allow_policy", "dlq", "redrive_allow_policy"))
		if allow["redrivePermission"] != "byQueue" || fmt.Sprint(allow["sourceQueueArns"]) != fmt.Sprint([]any{queueARN}) {
			t.Errorf("redrive allow policy = %v, want byQueue limited to the source queue", allow)
		}
		// Without a KMS key both queues use SSE-SQS: encryption cannot be turned off.
		for _, name := range []string{"this", "dlq"} {
			if got := constant(t, resourceAttr(t, queue, "aws_sqs_queue", name, "sqs_managed_sse_enabled"), ctx); !got.RawEquals(cty.True) {
				t.Errorf("aws_sqs_queue.%s.sqs_managed_sse_enabled = %#v without a KMS key, want true", name, got)
			}
			if _, ok := queue.block(t, "resource", "aws_sqs_queue", name).Body.Attributes["max_message_size"]; !ok {
				t.Errorf("aws_sqs_queue.%s does not set max_message_size explicitly", name)
			}
		}
	})

	t.Run("poller container", func(t *testing.T) {
		poller := modules["poller-service"]
		command := literalStrings(t, poller.local(t, "health_check_command"))
		if !slices.Equal(command, []string{"CMD", "/webhook", "healthcheck"}) {
			t.Errorf("health check command = %q", command)
		}
		definition := poller.text(poller.local(t, "container_definition").Range())
		for _, want := range []string{"stopTimeout = var.stop_timeout_seconds", "command = local.health_check_command", "readonlyRootFilesystem = true"} {
			if !strings.Contains(definition, want) {
				t.Errorf("container definition lacks %q", want)
			}
		}
		environment := poller.text(poller.local(t, "environment").Range())
		for _, name := range []string{"SQSWORKER_QUEUE_URL", "SQSWORKER_DRAIN_TIMEOUT", "SQSWORKER_HEALTH_ADDRESS"} {
			if !strings.Contains(environment, name) {
				t.Errorf("container environment lacks %s", name)
			}
		}
		// Target tracking on backlog per task: visible messages / running tasks.
		policy := poller.text(poller.block(t, "resource", "aws_appautoscaling_policy", "backlog_per_task").Range())
		for _, want := range []string{`"ApproximateNumberOfMessagesVisible"`, `"RunningTaskCount"`, `expression = "visible / tasks"`, "target_value = var.target_backlog_per_task"} {
			if !strings.Contains(policy, want) {
				t.Errorf("autoscaling policy lacks %q", want)
			}
		}
	})
}

// ---------------------------------------------------------------------------------------
// IAM
// ---------------------------------------------------------------------------------------

type statement struct {
	sid       string
	actions   []string
	resources hclsyntax.Expression
	trust     bool
}

func policyStatements(t testing.TB, c *config) []statement {
	t.Helper()
	var out []statement
	for _, document := range c.blocks("data", "aws_iam_policy_document") {
		var bodies []*hclsyntax.Body
		for _, block := range document.Body.Blocks {
			switch {
			case block.Type == "statement":
				bodies = append(bodies, block.Body)
			case block.Type == "dynamic" && block.Labels[0] == "statement":
				for _, content := range block.Body.Blocks {
					if content.Type == "content" {
						bodies = append(bodies, content.Body)
					}
				}
			}
		}
		for _, body := range bodies {
			s := statement{sid: literalString(t, body.Attributes["sid"].Expr)}
			if effect, ok := body.Attributes["effect"]; !ok || literalString(t, effect.Expr) != "Allow" {
				t.Errorf("%s: statement %s: want an explicit effect = \"Allow\"", c.name, s.sid)
			}
			actions, ok := body.Attributes["actions"]
			if !ok {
				t.Fatalf("%s: statement %s has no actions", c.name, s.sid)
			}
			s.actions = literalStrings(t, actions.Expr)
			for _, block := range body.Blocks {
				if block.Type == "principals" {
					s.trust = true
				}
			}
			if attr, ok := body.Attributes["resources"]; ok {
				s.resources = attr.Expr
			}
			out = append(out, s)
		}
	}
	return out
}

// referenceName names a traversal by its first two steps: "var.queue_arn",
// "aws_cloudwatch_log_group.this".
func referenceName(traversal hcl.Traversal) string {
	name := traversal.RootName()
	if len(traversal) > 1 {
		if attr, ok := traversal[1].(hcl.TraverseAttr); ok {
			name += "." + attr.Name
		}
	}
	return name
}

// No statement grants "*" or a service wildcard, every statement's resources are the
// module's own ARNs (inputs validated to be wildcard-free, or its log group), and each
// resource gets exactly the actions the runtime needs. The only "*" resource is
// ecr:GetAuthorizationToken, which supports no resource-level permission.
func TestIAMPoliciesAreLeastPrivilege(t *testing.T) {
	// The worker's own permissions are written once, in worker-permissions; the hosts add
	// only what the host itself needs (logs, pulling the image).
	worker := map[string][]string{
		"var.queue_arn":             {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"},
		"var.dlq_arn":               {"sqs:GetQueueUrl", "sqs:SendMessage"},
		"var.idempotency_table_arn": {"dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"},
		"var.kms_key_arns":          {"kms:Decrypt", "kms:GenerateDataKey"},
	}
	logs := map[string][]string{"aws_cloudwatch_log_group.this": {"logs:CreateLogStream", "logs:PutLogEvents"}}
	want := map[string]map[string][]string{
		"worker-permissions": worker,
		"lambda-consumer":    logs,
		"eventbridge-schedules": {
			"var.queue_arn":             {"sqs:SendMessage"},
			"var.dead_letter_queue_arn": {"sqs:SendMessage"},
			"var.kms_key_arns":          {"kms:Decrypt", "kms:GenerateDataKey"},
		},
		"payload-bucket": payloadBucketGrants,
		"task-token-state-machine": {
			"var.worker_queue_arns":  {"sqs:SendMessage"},
			"var.queue_kms_key_arns": {"kms:Decrypt", "kms:GenerateDataKey"},
			`"*"`:                    {"states:SendTaskFailure", "states:SendTaskHeartbeat", "states:SendTaskSuccess"},
		},
		"poller-service": merged(logs, map[string][]string{
			"var.ecr_repository_arn": {"ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"},
			`"*"`:                    {"ecr:GetAuthorizationToken"},
		}),
	}
	for _, moduleName := range moduleNames {
		module := loadModule(t, moduleName)
		got := map[string][]string{}
		for _, s := range policyStatements(t, module) {
			for _, action := range s.actions {
				service, name, ok := strings.Cut(action, ":")
				if !ok || service == "" || name == "" || strings.Contains(action, "*") {
					t.Errorf("%s: statement %s grants %q: name single actions, no wildcards", moduleName, s.sid, action)
				}
			}
			if s.trust {
				if !slices.Equal(s.actions, []string{"sts:AssumeRole"}) || s.resources != nil {
					t.Errorf("%s: trust statement %s: want only sts:AssumeRole and no resources", moduleName, s.sid)
				}
				continue
			}
			if s.resources == nil {
				t.Errorf("%s: statement %s has no resources", moduleName, s.sid)
				continue
			}
			elements := []hclsyntax.Expression{s.resources}
			if tuple, ok := s.resources.(*hclsyntax.TupleConsExpr); ok {
				elements = tuple.Exprs
			}
			for _, element := range elements {
				traversals := element.Variables()
				var literals []string
				if template, ok := element.(*hclsyntax.TemplateExpr); ok {
					for _, part := range template.Parts {
						if literal, ok := part.(*hclsyntax.LiteralValueExpr); ok {
							literals = append(literals, literal.Val.AsString())
						}
					}
				}
				switch {
				case len(traversals) == 0:
					value := constant(t, element, nil)
					// Actions with no resource type (Service Authorization Reference): ECR's
					// token, and the task-token answers (a task token is not an ARN).
					if value.AsString() == "*" && (slices.Equal(s.actions, []string{"ecr:GetAuthorizationToken"}) ||
						slices.Equal(s.actions, []string{"states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"})) {
						got[`"*"`] = append(got[`"*"`], s.actions...)
						continue
					}
					t.Errorf("%s: statement %s: hard-coded resource %q; use the module's own ARNs", moduleName, s.sid, value.AsString())
				case len(traversals) == 1:
					ref := referenceName(traversals[0])
					for _, literal := range literals {
						// "<log group ARN>:*" names the group's streams, nothing else.
						if literal != ":*" || ref != "aws_cloudwatch_log_group.this" {
							t.Errorf("%s: statement %s: resource adds %q to %s", moduleName, s.sid, literal, ref)
						}
					}
					got[ref] = append(got[ref], s.actions...)
				default:
					t.Errorf("%s: statement %s: a resource combines several references", moduleName, s.sid)
				}
			}
		}
		for ref := range got {
			slices.Sort(got[ref])
		}
		if wantModule := want[moduleName]; len(got) > 0 || wantModule != nil {
			if fmt.Sprint(got) != fmt.Sprint(wantModule) {
				t.Errorf("%s: actions by resource\n got %v\nwant %v", moduleName, got, wantModule)
			}
		}
		// No AWS managed policies (they grant "*" resources) and no inline policies besides
		// the documents checked above.
		for _, kind := range []string{"aws_iam_role_policy_attachment", "aws_iam_policy_attachment"} {
			if len(module.blocks("resource", kind)) > 0 {
				t.Errorf("%s: attaches a managed policy (%s)", moduleName, kind)
			}
		}
		for _, role := range module.blocks("resource", "aws_iam_role") {
			if _, ok := role.Body.Attributes["managed_policy_arns"]; ok {
				t.Errorf("%s: aws_iam_role.%s sets managed_policy_arns", moduleName, role.Labels[1])
			}
		}
		for _, policy := range module.blocks("resource", "aws_iam_role_policy") {
			expr := module.text(policy.Body.Attributes["policy"].Expr.Range())
			if !strings.HasPrefix(expr, "data.aws_iam_policy_document.") && expr != "module.worker_permissions[0].json" {
				t.Errorf("%s: aws_iam_role_policy.%s does not use a checked policy document", moduleName, policy.Labels[1])
			}
		}
	}
}

// ---------------------------------------------------------------------------------------
// Local emulator vs. examples/complete
// ---------------------------------------------------------------------------------------

// moduleArgs evaluates the literal arguments of the example's module blocks that use the
// given module source.
func moduleArgs(t testing.TB, c *config, source string) []map[string]cty.Value {
	t.Helper()
	var out []map[string]cty.Value
	for _, block := range c.blocks("module") {
		if literalString(t, block.Body.Attributes["source"].Expr) != source {
			continue
		}
		args := map[string]cty.Value{}
		for name, attr := range block.Body.Attributes {
			if value, diags := attr.Expr.Value(nil); !diags.HasErrors() {
				args[name] = value
			}
		}
		out = append(out, args)
	}
	return out
}

// localstack/resources.json (the emulator `make demo` and the tests use) and
// examples/complete name and configure the same queue, dead-letter queue and table, so
// local runs and production cannot drift apart.
func TestLocalStackMatchesCompleteExample(t *testing.T) {
	local, err := provision.LoadFile(filepath.Join(repoRoot(t), filepath.FromSlash(resourcesfile.Path)))
	if err != nil {
		t.Fatal(err)
	}
	example := loadConfig(t, filepath.Join(terraformDir(t), "examples", "complete"))

	queues := moduleArgs(t, example, "../../modules/worker-queue")
	if len(queues) != len(local.Queues) {
		t.Fatalf("examples/complete has %d worker-queue modules, resources.json %d queues", len(queues), len(local.Queues))
	}
	for i, q := range local.Queues {
		args := queues[i]
		compare := func(arg string, want cty.Value) {
			t.Helper()
			got, ok := args[arg]
			if !ok {
				t.Errorf("queue %s: examples/complete does not set %s literally (resources.json: %#v)", q.Name, arg, want)
				return
			}
			if converted, err := convert.Convert(got, want.Type()); err != nil || !converted.RawEquals(want) {
				t.Errorf("queue %s: %s = %#v in examples/complete, %#v in localstack/resources.json", q.Name, arg, got, want)
			}
		}
		compare("name", cty.StringVal(q.Name))
		compare("fifo_queue", cty.BoolVal(q.FIFO))
		compare("visibility_timeout_seconds", cty.NumberIntVal(int64(q.VisibilityTimeoutSeconds)))
		compare("message_retention_seconds", cty.NumberIntVal(int64(q.MessageRetentionSeconds)))
		compare("receive_wait_time_seconds", cty.NumberIntVal(int64(q.ReceiveWaitTimeSeconds)))
		compare("max_message_size", cty.NumberIntVal(int64(q.MaximumMessageSize)))
		compare("max_receive_count", cty.NumberIntVal(int64(q.MaxReceiveCount)))
		if q.DeadLetterQueue == nil {
			t.Errorf("queue %s: localstack/resources.json has no dead-letter queue; examples/complete always has one", q.Name)
			continue
		}
		compare("dlq_name", cty.StringVal(q.DeadLetterQueue.Name))
		compare("dlq_message_retention_seconds", cty.NumberIntVal(int64(q.DeadLetterQueue.MessageRetentionSeconds)))
	}

	tables := moduleArgs(t, example, "../../modules/idempotency-table")
	if len(tables) != len(local.Tables) {
		t.Fatalf("examples/complete has %d idempotency-table modules, resources.json %d tables", len(tables), len(local.Tables))
	}
	for i, table := range local.Tables {
		for arg, want := range map[string]string{"name": table.Name, "hash_key": table.PartitionKey, "ttl_attribute_name": table.TTLAttribute} {
			if got, ok := tables[i][arg]; !ok || !got.RawEquals(cty.StringVal(want)) {
				t.Errorf("table %s: %s = %#v in examples/complete, %q in localstack/resources.json", table.Name, arg, got, want)
			}
		}
	}

	// The example's local settings pass every module validation: the Lambda consumer's
	// 6 x timeout + window rule holds against the emulator's visibility timeout.
	lambda := moduleArgs(t, example, "../../modules/lambda-consumer")
	if len(lambda) != 1 {
		t.Fatalf("examples/complete: want one lambda-consumer module, found %d", len(lambda))
	}
	values := merged(baseValues["lambda-consumer"], nil)
	for name, value := range lambda[0] {
		if value.Type() == cty.Number {
			f, _ := value.AsBigFloat().Float64()
			values[name] = f
		}
	}
	values["queue_visibility_timeout_seconds"] = local.Queues[0].VisibilityTimeoutSeconds
	values["max_receive_count"] = local.Queues[0].MaxReceiveCount
	if failures := loadModule(t, "lambda-consumer").validate(t, values); len(failures) > 0 {
		t.Errorf("examples/complete's Lambda settings fail against resources.json: %v", failures)
	}
}

// ---------------------------------------------------------------------------------------
// READMEs
// ---------------------------------------------------------------------------------------

const (
	docsBegin = "<!-- BEGIN_TF_DOCS -->"
	docsEnd   = "<!-- END_TF_DOCS -->"
)

func markdownCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", "<br>")
}

// docsBlock renders a module's inputs and outputs the way terraform-docs' markdown table
// does, so the README block can be regenerated offline (-update) or by terraform-docs.
func docsBlock(c *config) string {
	var b strings.Builder
	b.WriteString(docsBegin + "\n## Inputs\n\n| Name | Description | Type | Default | Required |\n|------|-------------|------|---------|:--------:|\n")
	for _, v := range slices.SortedFunc(slices.Values(c.variables), func(a, b *variable) int { return strings.Compare(a.name, b.name) }) {
		def, required := "n/a", "yes"
		if v.def != cty.NilVal {
			def, required = "`"+strings.Join(strings.Fields(v.defSrc), " ")+"`", "no"
		}
		fmt.Fprintf(&b, "| <a name=\"input_%s\"></a> [%s](#input\\_%s) | %s | `%s` | %s | %s |\n",
			v.name, v.name, strings.ReplaceAll(v.name, "_", `\_`), markdownCell(v.description), v.typeSrc, markdownCell(def), required)
	}
	b.WriteString("\n## Outputs\n\n| Name | Description |\n|------|-------------|\n")
	for _, out := range slices.SortedFunc(slices.Values(c.outputs), func(a, b output) int { return strings.Compare(a.name, b.name) }) {
		fmt.Fprintf(&b, "| <a name=\"output_%s\"></a> [%s](#output\\_%s) | %s |\n",
			out.name, out.name, strings.ReplaceAll(out.name, "_", `\_`), markdownCell(out.description))
	}
	b.WriteString(docsEnd)
	return b.String()
}

// Each module README documents every input and output between the terraform-docs markers.
func TestReadmesDocumentInputsAndOutputs(t *testing.T) {
	for _, name := range moduleNames {
		module := loadModule(t, name)
		path := filepath.Join(module.dir, "README.md")
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		readme := string(src)
		begin, end := strings.Index(readme, docsBegin), strings.Index(readme, docsEnd)
		if begin < 0 || end < begin {
			t.Errorf("%s: missing %s ... %s", path, docsBegin, docsEnd)
			continue
		}
		if *update {
			readme = readme[:begin] + docsBlock(module) + readme[end+len(docsEnd):]
			if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
				t.Fatal(err)
			}
			end = strings.Index(readme, docsEnd)
		}
		block := readme[begin:end]
		for _, v := range module.variables {
			if !strings.Contains(block, `name="input_`+v.name+`"`) {
				t.Errorf("%s: input %s is not documented (go test ./infra/terraform/ -run TestReadmes -update)", path, v.name)
			}
		}
		for _, out := range module.outputs {
			if !strings.Contains(block, `name="output_`+out.name+`"`) {
				t.Errorf("%s: output %s is not documented (go test ./infra/terraform/ -run TestReadmes -update)", path, out.name)
			}
		}
	}
}
