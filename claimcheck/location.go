package claimcheck

import (
	"errors"
	"fmt"
	"strings"
)

// Location names where payloads may be: a bucket and a key prefix within it. It is the
// allow-list entry of [ResolverConfig.Allow], and [Store.Location] returns the store's.
//
// The least-privilege IAM policy for a location grants s3:PutObject on
// arn:aws:s3:::BUCKET/PREFIX* to producers, and s3:GetObject and s3:DeleteObject on the
// same resource to consumers (s3:DeleteObject only with a [Cleaner]), plus
// s3:ListBucket on arn:aws:s3:::BUCKET with the condition s3:prefix = PREFIX* so that
// S3 answers NoSuchKey, not AccessDenied, for a missing payload. The Terraform module
// infra/terraform/modules/payload-bucket outputs these policies.
type Location struct {
	// Bucket is the bucket's name, compared exactly. Required.
	Bucket string
	// KeyPrefix is the prefix every key must start with, compared byte for byte; empty
	// allows the whole bucket. End it with "/" ("payloads/"): "payloads" would also
	// allow "payloads-private/...".
	KeyPrefix string
}

// String returns "s3://BUCKET/PREFIX*".
func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.KeyPrefix + "*" }

// contains reports whether the pointer's object is in l. The key must be a plain key
// (see checkKey).
func (l Location) contains(p Pointer) bool {
	return p.Bucket == l.Bucket && strings.HasPrefix(p.Key, l.KeyPrefix)
}

// Validate checks l as configuration: a bucket, and a key prefix made of S3's safe key
// characters (letters, digits, ! - _ . * ' ( ) /) without an empty, "." or ".." path
// segment. Other packages that keep objects in a Location (package jobs' large results)
// check theirs with it.
func (l Location) Validate() error { return l.validate() }

// Check returns nil when the object bucket/key lies in l, and otherwise an error saying
// why not: another bucket, a key that is not a plain S3 key (at most 1,024 bytes of the
// safe characters, no empty, "." or ".." segment, no trailing "/"), or a key outside the
// prefix. It is the test [Resolver] applies to a pointer before any read.
func (l Location) Check(bucket, key string) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if !l.contains(Pointer{Bucket: bucket, Key: key}) {
		return fmt.Errorf("s3://%s/%s is outside %s", bucket, key, l)
	}
	return nil
}

// validate checks l as configuration.
func (l Location) validate() error {
	if l.Bucket == "" {
		return errors.New("the bucket is empty")
	}
	if l.KeyPrefix == "" {
		return nil
	}
	return checkKeyText(l.KeyPrefix)
}

// checkKey checks that a pointer's key is a plain S3 key, one that every layer between
// here and S3 (the SDK's URI encoding, proxies, emulators, S3 itself) reads as the same
// object: at most 1,024 bytes, only the characters S3's object key naming guidelines
// call safe (letters, digits, "!", "-", "_", ".", "*", "'", "(", ")" and the "/"
// delimiter), and no empty, "." or ".." path segment. Percent-encoded, backslash and
// dot-segment tricks are refused before the prefix is compared, so a key cannot climb
// out of its prefix in any layer that normalises paths.
func checkKey(key string) error {
	if key == "" {
		return errors.New("the key is empty")
	}
	if len(key) > maxKeyLength {
		return fmt.Errorf("the key is %d bytes, above S3's %d", len(key), maxKeyLength)
	}
	if strings.HasSuffix(key, "/") {
		return errors.New("the key ends with \"/\" (a folder marker, not a payload)")
	}
	return checkKeyText(key)
}

// checkKeyText checks the characters and segments of a key or key prefix.
func checkKeyText(text string) error {
	for i := 0; i < len(text); i++ {
		if !safeKeyByte(text[i]) {
			return fmt.Errorf("%q has the character %q at byte %d, outside S3's safe key characters (letters, digits, ! - _ . * ' ( ) /)", text, text[i], i)
		}
	}
	segments := strings.Split(text, "/")
	for i, segment := range segments {
		last := i == len(segments)-1
		switch {
		case segment == "." || segment == "..":
			return fmt.Errorf("%q has a %q path segment", text, segment)
		case segment == "" && !last:
			return fmt.Errorf("%q has an empty path segment (a leading or doubled \"/\")", text)
		}
	}
	return nil
}

// safeKeyByte reports whether b is one of S3's safe key characters.
func safeKeyByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("!-_.*'()/", b) >= 0
}
