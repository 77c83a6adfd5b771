// placeholder: EdgeService
