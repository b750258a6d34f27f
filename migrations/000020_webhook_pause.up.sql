-- A struggling receiver is paused as a whole: no delivery of the webhook is
-- claimed before paused_until, by any replica, and none spends an attempt
-- meanwhile — deliveries queued during the pause included. The dispatcher
-- sets it when an answer says the receiver as a whole is in trouble (see
-- web/webhook/dispatcher.go); a pause only ever lengthens.
ALTER TABLE webhooks ADD COLUMN IF NOT EXISTS paused_until timestamptz;
