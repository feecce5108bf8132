package terraform_test

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// renderDynamic evaluates the dynamic block of the lambda-consumer's event source mapping
// named name for the given variables, the way Terraform expands it: one map of attribute
// values per element of for_each (none when the block is left out).
func renderDynamic(t *testing.T, c *config, name string, vars map[string]cty.Value) []map[string]cty.Value {
	t.Helper()
	mapping := c.block(t, "resource", "aws_lambda_event_source_mapping", "this")
	var dynamic *hclsyntax.Block
	for _, block := range mapping.Body.Blocks {
		if block.Type == "dynamic" && len(block.Labels) == 1 && block.Labels[0] == name {
			dynamic = block
		}
	}
	if dynamic == nil {
		t.Fatalf("aws_lambda_event_source_mapping.this has no dynamic %q block", name)
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}, Functions: terraformFunctions}
	forEach := constant(t, dynamic.Body.Attributes["for_each"].Expr, ctx)
	var content *hclsyntax.Body
	for _, block := range dynamic.Body.Blocks {
		if block.Type == "content" {
			content = block.Body
		}
	}
	if content == nil {
		t.Fatalf("dynamic %q has no content block", name)
	}
	var rendered []map[string]cty.Value
	for it := forEach.ElementIterator(); it.Next(); {
		key, value := it.Element()
		inner := ctx.NewChild()
		inner.Variables = map[string]cty.Value{name: cty.ObjectVal(map[string]cty.Value{"key": key, "value": value})}
		attrs := map[string]cty.Value{}
		for attrName, attr := range content.Attributes {
			attrs[attrName] = constant(t, attr.Expr, inner)
		}
		rendered = append(rendered, attrs)
	}
	return rendered
}

// The event source mapping gets scaling_config in standard mode with maximum_concurrency,
// provisioned_poller_config in provisioned mode (a pollers variable left null stays null,
// for AWS's default), never both for inputs the validations accept, and metrics_config
// with the requested metrics (EventCount by default, none for []).
func TestEventSourceMappingScalingModesAndMetrics(t *testing.T) {
	module := loadModule(t, "lambda-consumer")
	num := func(n int64) cty.Value { return cty.NumberIntVal(n) }
	null := cty.NullVal(cty.Number)
	eventCount := cty.ListVal([]cty.Value{cty.StringVal("EventCount")})
	cases := []struct {
		name                     string
		concurrency, min, max    cty.Value
		metrics                  cty.Value
		scaling, pollers, metric []map[string]cty.Value
	}{
		{
			name: "standard mode, defaults", concurrency: null, min: null, max: null, metrics: eventCount,
			metric: []map[string]cty.Value{{"metrics": eventCount}},
		},
		{
			name: "standard mode, maximum concurrency 5", concurrency: num(5), min: null, max: null, metrics: eventCount,
			scaling: []map[string]cty.Value{{"maximum_concurrency": num(5)}},
			metric:  []map[string]cty.Value{{"metrics": eventCount}},
		},
		{
			name: "provisioned mode 2 to 10", concurrency: null, min: num(2), max: num(10), metrics: eventCount,
			pollers: []map[string]cty.Value{{"minimum_pollers": num(2), "maximum_pollers": num(10)}},
			metric:  []map[string]cty.Value{{"metrics": eventCount}},
		},
		{
			name: "provisioned mode, minimum only", concurrency: null, min: num(5), max: null, metrics: eventCount,
			pollers: []map[string]cty.Value{{"minimum_pollers": num(5), "maximum_pollers": null}},
			metric:  []map[string]cty.Value{{"metrics": eventCount}},
		},
		{
			name: "no mapping metrics", concurrency: null, min: null, max: null, metrics: cty.ListValEmpty(cty.String),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inputs := map[string]any{}
			for name, value := range map[string]cty.Value{"maximum_concurrency": tc.concurrency, "minimum_pollers": tc.min, "maximum_pollers": tc.max} {
				if !value.IsNull() {
					f, _ := value.AsBigFloat().Int64()
					inputs[name] = int(f)
				}
			}
			var metrics []string
			for it := tc.metrics.ElementIterator(); it.Next(); {
				_, v := it.Element()
				metrics = append(metrics, v.AsString())
			}
			inputs["event_source_mapping_metrics"] = append([]string{}, metrics...)
			if failures := module.validate(t, merged(baseValues["lambda-consumer"], inputs)); len(failures) > 0 {
				t.Fatalf("inputs rejected: %v", failures)
			}
			vars := map[string]cty.Value{
				"maximum_concurrency":          tc.concurrency,
				"minimum_pollers":              tc.min,
				"maximum_pollers":              tc.max,
				"event_source_mapping_metrics": tc.metrics,
			}
			for name, want := range map[string][]map[string]cty.Value{"scaling_config": tc.scaling, "provisioned_poller_config": tc.pollers, "metrics_config": tc.metric} {
				got := renderDynamic(t, module, name, vars)
				if len(got) != len(want) {
					t.Errorf("%s: %d blocks, want %d (%v)", name, len(got), len(want), got)
					continue
				}
				for i := range want {
					for attr, value := range want[i] {
						if !got[i][attr].RawEquals(value) {
							t.Errorf("%s.%s = %#v, want %#v", name, attr, got[i][attr], value)
						}
					}
					if len(got[i]) != len(want[i]) {
						t.Errorf("%s sets %v, want exactly %v", name, got[i], want[i])
					}
				}
			}
		})
	}
}
