// placeholder: EdgeConfig
