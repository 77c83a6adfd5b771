// placeholder: EdgeProtocol
