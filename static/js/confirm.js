// Confirmation panel behaviour (progressive enhancement over htmx).
