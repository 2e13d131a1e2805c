"""The Textual front end: app, screens, widgets and one stylesheet."""
