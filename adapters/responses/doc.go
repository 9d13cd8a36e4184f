package responses
