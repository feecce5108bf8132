package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The Spring Cloud AWS SQS contender: bench/spring, a Spring Boot application whose
// SqsMessageListenerContainer has maxConcurrentMessages = concurrency,
// maxMessagesPerPoll 10 and acknowledgement batching (ON_SUCCESS, its defaults). The
// bench builds it with Maven (`mvn -q -B package`, dependencies from Maven Central) into
// bench/spring/target/bench-spring.jar unless the jar is newer than its sources.

// ensureSpring builds the jar when needed and returns its path and the versions used.
func ensureSpring(springDir string, logs io.Writer) (string, map[string]string, error) {
	jar := filepath.Join(springDir, "target", "bench-spring.jar")
	if stale(jar, filepath.Join(springDir, "pom.xml"), filepath.Join(springDir, "src")) {
		for _, tool := range []string{"mvn", "java"} {
			if _, err := exec.LookPath(tool); err != nil {
				return "", nil, fmt.Errorf("%s is not installed (Java 17 and Maven are needed)", tool)
			}
		}
		cmd := exec.Command("mvn", "-q", "-B", "package", "-DskipTests")
		cmd.Dir = springDir
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Run(); err != nil {
			return "", nil, fmt.Errorf("mvn package in %s: %w", springDir, err)
		}
	}
	versions := map[string]string{}
	data, err := os.ReadFile(filepath.Join(springDir, "pom.xml"))
	if err != nil {
		return "", nil, err
	}
	var pom struct {
		Parent struct {
			Version string `xml:"version"`
		} `xml:"parent"`
		Properties struct {
			Java           string `xml:"java.version"`
			SpringCloudAWS string `xml:"spring-cloud-aws.version"`
		} `xml:"properties"`
	}
	if err := xml.Unmarshal(data, &pom); err != nil {
		return "", nil, err
	}
	versions["Spring Boot"] = pom.Parent.Version
	versions["spring-cloud-aws-starter-sqs"] = pom.Properties.SpringCloudAWS
	if out, err := exec.Command("java", "-XshowSettings:properties", "-version").CombinedOutput(); err == nil {
		for line := range strings.Lines(string(out)) {
			if value, ok := cutProperty(line, "java.runtime.version"); ok {
				versions["java"] = value
			}
		}
	}
	return jar, versions, nil
}

// stale reports whether target is missing or older than any file under sources.
func stale(target string, sources ...string) bool {
	info, err := os.Stat(target)
	if err != nil {
		return true
	}
	newer := false
	for _, source := range sources {
		_ = filepath.Walk(source, func(_ string, file os.FileInfo, err error) error {
			if err == nil && !file.IsDir() && file.ModTime().After(info.ModTime()) {
				newer = true
			}
			return nil
		})
	}
	return newer
}

func springContender(jar string) contender {
	return contender{
		name:        "spring",
		label:       "Spring Cloud AWS SQS (Java)",
		notesStarts: true, // BenchApplication, with BENCH_STARTS_FILE
		start: func(ctx context.Context, env runEnv) (*process, error) {
			return startProcess("java", []string{"-jar", jar}, filepath.Dir(jar), append(env.env,
				"BENCH_QUEUE_URL="+env.queueURL,
				"BENCH_ENDPOINT="+env.sqsEndpoint,
				"BENCH_CONCURRENCY="+strconv.Itoa(env.concurrency),
			), env.logs)
		},
	}
}

// cutProperty returns the value of a "    name = value" line of java -XshowSettings.
func cutProperty(line, name string) (string, bool) {
	key, value, ok := strings.Cut(strings.TrimSpace(line), " = ")
	return value, ok && key == name
}
