package encrypt

import (
	"context"
	"strings"
	"testing"
)

// The CPU cost per job with the data key cached on both sides (KMS calls are counted by
// the emulator tests): go test -run '^$' -bench . ./encrypt/
func BenchmarkEncrypt1KiB(b *testing.B) {
	e, err := NewEncrypter(&fakeKMS{}, EncrypterConfig{KeyID: testKey})
	if err != nil {
		b.Fatal(err)
	}
	body, sent := strings.Repeat("x", 1024), attrs("charge", "01J0")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := e.Encrypt(context.Background(), body, sent); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecrypt1KiB(b *testing.B) {
	fake := &fakeKMS{}
	e, err := NewEncrypter(fake, EncrypterConfig{KeyID: testKey})
	if err != nil {
		b.Fatal(err)
	}
	d, err := NewDecrypter(fake, DecrypterConfig{AllowedKeys: []string{testKey}})
	if err != nil {
		b.Fatal(err)
	}
	sent := attrs("charge", "01J0")
	body, envelope, err := e.Encrypt(context.Background(), strings.Repeat("x", 1024), sent)
	if err != nil {
		b.Fatal(err)
	}
	attributes := received(body, sent, envelope)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decrypt(context.Background(), body, attributes); err != nil {
			b.Fatal(err)
		}
	}
}
