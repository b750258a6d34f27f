package main

import (
	"context"
	"log/slog"

	"github.com/waterline-dev/waterline/store"
	"github.com/waterline-dev/waterline/web/webhook"
)

// webhooks is the outbound webhook machinery of one serve process: the
// notifier queues a delivery per subscribed webhook when an incident
// opens, gets its first analysis, changes top cause or resolves; the
// dispatcher sends due deliveries (several replicas share the queue).
type webhooks struct {
	notifier   *webhook.Notifier
	dispatcher *webhook.Dispatcher
	done       chan struct{}
}

func newWebhooks(c config, st *store.Store, log *slog.Logger) *webhooks {
	d := webhook.NewDispatcher(st, webhook.Options{Log: log, AllowPrivate: c.WebhookAllowPrivate})
	n := webhook.NewNotifier(st, webhook.NotifierOptions{PublicURL: c.PublicURL, Log: log, OnQueued: d.Wake})
	return &webhooks{notifier: n, dispatcher: d, done: make(chan struct{})}
}

// incidentChanged is the hook for every path that creates, changes or
// resolves an incident. It never blocks.
func (w *webhooks) incidentChanged(id int64) { w.notifier.IncidentChanged(id) }

// run works both until ctx ends; wait returns once a delivery being sent
// then has been finished and recorded.
func (w *webhooks) run(ctx context.Context) {
	go w.notifier.Run(ctx)
	go func() { w.dispatcher.Run(ctx); close(w.done) }()
}

func (w *webhooks) wait() { <-w.done }
