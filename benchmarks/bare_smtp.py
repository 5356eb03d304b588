"""The email baseline: smtplib sending N messages over one reused connection.

Usage: python -m benchmarks.bare_smtp PORT N. Each message is built the way duequeue builds
one (EmailMessage, same headers), so the baseline is the limit of smtplib to this sink.
"""

import smtplib
import sys
from email.message import EmailMessage
from email.utils import formatdate


def main() -> None:
    port, n = int(sys.argv[1]), int(sys.argv[2])
    with smtplib.SMTP("127.0.0.1", port, timeout=10) as conn:
        for i in range(n):
            mail = EmailMessage()
            mail["From"] = "reminders@example.com"
            mail["To"] = "ann@example.com"
            mail["Subject"] = f"Reminder {i}"
            mail["Date"] = formatdate(usegmt=True)
            mail["Message-ID"] = f"<bare_{i}@example.com>"
            mail.set_content("Due today", charset="utf-8")
            conn.sendmail("reminders@example.com", ["ann@example.com"], mail.as_bytes())
    print(n)


if __name__ == "__main__":
    main()
