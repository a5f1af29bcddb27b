// Package crash holds the crash-safety suites: the real daemon, killed
// with SIGKILL at random moments under load and restarted, must keep all
// it acknowledged (registrations, renewals, mailbox events) and never go
// back on a sequence number.
package crash
