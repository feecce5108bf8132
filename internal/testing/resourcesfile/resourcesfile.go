// Package resourcesfile finds and reads this repository's localstack/resources.json, the
// queues and tables (in the format of package provision) that the demo and the local
// emulator tests provision, so they use the same names and settings as Terraform's
// examples:
//
//	resources, err := resourcesfile.Load() // walks up to go.mod, reads localstack/resources.json
//	if err != nil { return err }
//	result, err := provision.Apply(ctx, sqsClient, dynamoClient, resources, provision.Options{Reset: true})
package resourcesfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sqsworker/sqsworker/provision"
)

// Path is the resources file's path relative to the root module's directory.
const Path = "localstack/resources.json"

// ModuleRoot returns the nearest directory at or above dir that holds a go.mod file.
func ModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resourcesfile: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("resourcesfile: no go.mod found in the working directory or above it")
		}
		dir = parent
	}
}

// Find returns the path of localstack/resources.json in the module that holds the
// working directory.
func Find() (string, error) {
	root, err := ModuleRoot(".")
	if err != nil {
		return "", err
	}
	return filepath.Join(root, Path), nil
}

// Load reads and validates the module's localstack/resources.json (see [Find] and
// [provision.LoadFile]).
func Load() (*provision.Resources, error) {
	path, err := Find()
	if err != nil {
		return nil, err
	}
	return provision.LoadFile(path)
}
