/* What a notification says at the end of a job, from the job's JSON (as
 * GetJob shows it, with its request, efficiency and notes): a mail's subject
 * and text, and a webhook's JSON body, {"text", "host", "job"}, whose "text"
 * is the same text (what Slack-compatible webhooks show). */
#ifndef RT_NOTICE_MESSAGE_H
#define RT_NOTICE_MESSAGE_H

#include <json-c/json.h>

struct rt_notice_msg {
    char *subject;   /* one line: "Job 42 (train) failed on gpu01: 2 notes" */
    char *text;      /* lines for people: the end, the figures, efficiency, the notes */
    char *json;      /* the webhook's body */
};

/* user: the owner's name (NULL: its uid is shown). */
void rt_notice_compose(struct json_object *job, const char *host, const char *user, struct rt_notice_msg *out);
void rt_notice_msg_free(struct rt_notice_msg *m);

#endif
