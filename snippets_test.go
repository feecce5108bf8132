package sqsworker_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSnippetsExitZeroAfterACleanRun: a Run (poller, worker, relay, scheduler) returns nil
// after a graceful drain, and log.Fatal(nil) still prints "<nil>" and exits 1, which an
// ECS deployment reads as a crash. No Go file, package comment or Markdown Go block of
// the repository may hand a Run's result to a fatal exit unconditionally (see
// exitsOnRun); the README's quick start and the outbox example did.
func TestSnippetsExitZeroAfterACleanRun(t *testing.T) {
	var found []string
	err := filepath.WalkDir(".", func(path string, entry os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() {
			if path != "." && (strings.HasPrefix(entry.Name(), ".") || entry.Name() == "node_modules" || entry.Name() == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(path, ".go"):
			text, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, line := range exitsOnRun(path, string(text)) {
				found = append(found, fmt.Sprintf("%s:%d", path, line))
			}
			for _, s := range packageCommentCode(path, string(text)) {
				for _, line := range exitsOnRun(s.where, s.code) {
					found = append(found, fmt.Sprintf("%s line %d", s.where, line))
				}
			}
		case strings.HasSuffix(path, ".md"):
			text, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, block := range strings.Split(string(text), "```go\n")[1:] {
				code, _, _ := strings.Cut(block, "```")
				for _, line := range exitsOnRun(path, code) {
					found = append(found, fmt.Sprintf("%s Go block %d line %d", path, i+1, line))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, where := range found {
		t.Errorf("%s: a Run's error goes to a fatal exit even when it is nil (a clean drain exits 1); write `if err := x.Run(ctx); err != nil { log.Fatal(err) }`", where)
	}
}

// TestExitsOnRun: the pattern in its forms, and the correct forms it must let through.
func TestExitsOnRun(t *testing.T) {
	for code, want := range map[string]int{
		"log.Fatal(worker.Run(ctx))":                                                  1,
		"log.Fatalf(\"stopped: %v\", relay.Run(ctx))":                                 1,
		"log.Fatalln(srv.RunContext(ctx))":                                            1,
		"logger.Fatal(ticks.Run(ctx))":                                                1,
		"panic(server.Run(ctx))":                                                      1,
		"go func() { log.Fatal(relay.Run(ctx)) }()":                                   1,
		"err := worker.Run(ctx)\nlog.Fatal(err)":                                      1,
		"var err error\nerr = worker.Run(ctx)\nlog.Panic(err)":                        1,
		"if err := worker.Run(ctx); err != nil {\n\tlog.Fatal(err)\n}":                0,
		"err := worker.Run(ctx)\nif err != nil {\n\tlog.Fatal(err)\n}":                0,
		"log.Fatal(http.ListenAndServe(\":9090\", nil))":                              0, // never returns nil
		"err := worker.Run(ctx)\nlog.Print(err)":                                      0,
		"log.Fatal(run(ctx))":                                                         0, // not a Run
		"os.Exit(m.Run())":                                                            0, // testing.M.Run returns an exit code
		"err := worker.Run(ctx)\nfmt.Println(\"done\")\nlog.Fatal(errors.New(\"x\"))": 0,
	} {
		if got := exitsOnRun("case", code); len(got) != want {
			t.Errorf("exitsOnRun(%q) found %d (lines %v), want %d", code, len(got), got, want)
		}
	}
}

// exitsOnRun returns the lines of code (a whole Go file, or statements or declarations
// as in a snippet) where the result of a call named Run... goes to a fatal exit
// unconditionally: X.Fatal*(... x.Run(...) ...), X.Panic*(...) or panic(...) of it, or
// `err := x.Run(...)` (or `err = ...`) directly followed by such an exit of err.
// Code that does not parse as Go has no lines.
func exitsOnRun(name, code string) []int {
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, name, code, parser.SkipObjectResolution)
	offset := 0
	if err != nil {
		file, err = parser.ParseFile(fset, name, "package p\n"+code, parser.SkipObjectResolution)
		offset = 1
	}
	if err != nil {
		file, err = parser.ParseFile(fset, name, "package p\nfunc _() {\n"+code+"\n}", parser.SkipObjectResolution)
		offset = 2
	}
	if err != nil {
		return nil
	}
	var lines []int
	report := func(node ast.Node) { lines = append(lines, fset.Position(node.Pos()).Line-offset) }
	ast.Inspect(file, func(node ast.Node) bool {
		switch node := node.(type) {
		case *ast.CallExpr:
			if isFatalExit(node) && containsRunCall(node.Args) {
				report(node)
			}
		case *ast.BlockStmt:
			for i := 0; i+1 < len(node.List); i++ {
				result := runResult(node.List[i])
				if result == "" {
					continue
				}
				next, ok := node.List[i+1].(*ast.ExprStmt)
				if !ok {
					continue
				}
				if call, ok := next.X.(*ast.CallExpr); ok && isFatalExit(call) && namesIdent(call.Args, result) {
					report(call)
				}
			}
		}
		return true
	})
	return lines
}

// isFatalExit reports whether call ends the program whatever its argument: a
// Fatal/Fatalf/Fatalln or Panic/Panicf/Panicln method or function (package log, a
// logger), or the builtin panic.
func isFatalExit(call *ast.CallExpr) bool {
	var name string
	switch fun := call.Fun.(type) {
	case *ast.SelectorExpr:
		name = fun.Sel.Name
	case *ast.Ident:
		if fun.Name == "panic" {
			return true
		}
		name = fun.Name
	default:
		return false
	}
	return strings.HasPrefix(name, "Fatal") || strings.HasPrefix(name, "Panic")
}

// isRunCall reports whether expr calls a method or function whose name starts with Run.
func isRunCall(expr ast.Expr) bool {
	call, ok := expr.(*ast.CallExpr)
	if !ok {
		return false
	}
	switch fun := call.Fun.(type) {
	case *ast.SelectorExpr:
		return strings.HasPrefix(fun.Sel.Name, "Run")
	case *ast.Ident:
		return strings.HasPrefix(fun.Name, "Run")
	}
	return false
}

func containsRunCall(args []ast.Expr) bool {
	for _, arg := range args {
		if isRunCall(arg) {
			return true
		}
	}
	return false
}

// runResult returns the name a statement assigns a Run call's single result to
// (`err := x.Run(ctx)`, `err = x.Run(ctx)`), "" for any other statement.
func runResult(stmt ast.Stmt) string {
	assign, ok := stmt.(*ast.AssignStmt)
	if !ok || len(assign.Lhs) != 1 || len(assign.Rhs) != 1 || !isRunCall(assign.Rhs[0]) {
		return ""
	}
	if ident, ok := assign.Lhs[0].(*ast.Ident); ok {
		return ident.Name
	}
	return ""
}

func namesIdent(args []ast.Expr, name string) bool {
	for _, arg := range args {
		if ident, ok := arg.(*ast.Ident); ok && ident.Name == name {
			return true
		}
	}
	return false
}
