package terraform_test

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sqsworker/sqsworker/idempotency"
	"github.com/sqsworker/sqsworker/internal/testing/resourcesfile"
	"github.com/sqsworker/sqsworker/provision"
	"github.com/sqsworker/sqsworker/table"
)

// TestIdempotencyTableMatchesPackageTable: the Terraform module, the complete example and
// the local provisioning (localstack/resources.json, which `make demo` creates) declare
// the table package table declares: the partition key and the TTL attribute, and the
// idempotency records' attribute names the Go store writes. (The module listed no
// in_progress_deadline attribute.)
func TestIdempotencyTableMatchesPackageTable(t *testing.T) {
	t.Parallel()
	module := loadModule(t, "idempotency-table")
	defaults := map[string]cty.Value{}
	for _, v := range module.variables {
		defaults[v.name] = v.def
	}
	for name, want := range map[string]string{"hash_key": table.PartitionKey, "ttl_attribute_name": table.TTLAttribute} {
		if got := defaults[name]; got == cty.NilVal || !got.RawEquals(cty.StringVal(want)) {
			t.Errorf("variable %s defaults to %#v; package table says %q", name, got, want)
		}
	}

	value, diags := module.local(t, "attribute_names").Value(&hcl.EvalContext{Variables: map[string]cty.Value{
		"var": cty.ObjectVal(map[string]cty.Value{"hash_key": defaults["hash_key"], "ttl_attribute_name": defaults["ttl_attribute_name"]}),
	}})
	if diags.HasErrors() {
		t.Fatalf("local.attribute_names: %s", diags.Error())
	}
	got := map[string]string{}
	for name, attribute := range value.AsValueMap() {
		got[name] = attribute.AsString()
	}
	want := map[string]string{
		"key":                  idempotency.DefaultKeyAttribute,
		"status":               idempotency.DefaultStatusAttribute,
		"expiration":           idempotency.DefaultExpirationAttribute,
		"in_progress_expiry":   idempotency.DefaultInProgressExpiryAttribute,
		"in_progress_deadline": idempotency.DefaultDeadlineAttribute,
		"lease":                idempotency.DefaultLeaseAttribute,
		"validation":           idempotency.DefaultValidationAttribute,
		"data":                 idempotency.DefaultDataAttribute,
	}
	if !maps.Equal(got, want) {
		t.Errorf("local.attribute_names = %v; the Go store writes %v", got, want)
	}
	if idempotency.DefaultKeyAttribute != table.PartitionKey || idempotency.DefaultExpirationAttribute != table.TTLAttribute {
		t.Errorf("idempotency's key and expiration attributes are not package table's")
	}

	example := loadConfig(t, filepath.Join(terraformDir(t), "examples", "complete"))
	for _, args := range moduleArgs(t, example, "../../modules/idempotency-table") {
		for name, want := range map[string]string{"hash_key": table.PartitionKey, "ttl_attribute_name": table.TTLAttribute} {
			if got, set := args[name]; set && !got.RawEquals(cty.StringVal(want)) {
				t.Errorf("examples/complete: %s = %#v; package table says %q", name, got, want)
			}
		}
	}

	local, err := provision.LoadFile(filepath.Join(repoRoot(t), filepath.FromSlash(resourcesfile.Path)))
	if err != nil {
		t.Fatal(err)
	}
	for _, declared := range local.Tables {
		if declared.PartitionKey != table.PartitionKey || declared.TTLAttribute != table.TTLAttribute {
			t.Errorf("localstack/resources.json: table %s has key %q and TTL %q; package table says %q and %q",
				declared.Name, declared.PartitionKey, declared.TTLAttribute, table.PartitionKey, table.TTLAttribute)
		}
	}
	if len(local.Tables) == 0 || !slices.ContainsFunc(local.Tables, func(d provision.Table) bool { return d.Name != "" }) {
		t.Errorf("localstack/resources.json declares no table")
	}
}
