"""Tables, figures and traces for people: the only place that formats results."""
